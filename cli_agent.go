package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"huddle/protocol"
	"huddle/team"
)

func init() {
	commands = append(commands, command{name: "agent", hidden: true, summary: "built-in exec agents: echo", run: runAgent})
}

// runAgent runs a built-in exec teammate, so the demo and the tests use the
// exec runtime without another language installed.
func runAgent(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("agent", "echo [--misbehave N]", stderr)
	misbehave := fs.Int("misbehave", 0, "write a line that is not an action after every N-th message (0: never)")
	if len(args) == 0 || args[0] != "echo" {
		fmt.Fprintln(stderr, "huddle agent: want 'echo'")
		return exitUsage
	}
	if code, ok := parseFlags(fs, args[1:]); !ok {
		return code
	}
	return echoAgent(os.Stdin, stdout, stderr, *misbehave)
}

// echoAgent answers every message with an echo, approves every shutdown,
// and submits one plan when it starts.
func echoAgent(in io.Reader, out, log io.Writer, misbehave int) int {
	enc := json.NewEncoder(out)
	say := func(a team.Action) {
		if err := enc.Encode(a); err != nil {
			fmt.Fprintln(log, "echo agent:", err)
		}
	}
	say(team.Action{Action: "status", Status: "idle", Activity: "listening"})
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), protocol.MaxLine)
	n := 0
	for sc.Scan() {
		m, err := protocol.Decode(sc.Bytes(), protocol.Fallback{})
		if err != nil {
			fmt.Fprintln(log, "echo agent: bad input:", err)
			continue
		}
		switch m.Type {
		case protocol.TypeMessage, protocol.TypeBroadcast:
			n++
			say(team.Action{Action: "send", To: m.From, Content: "echo: " + m.Content})
			if misbehave > 0 && n%misbehave == 0 {
				fmt.Fprintln(out, "this is not an action")
			}
		case protocol.TypeShutdownRequest:
			say(team.Action{Action: "shutdown_response", RequestID: m.RequestID, Approve: protocol.Bool(true), Reason: "echo agent stopping"})
			return exitOK
		}
	}
	return exitOK
}
