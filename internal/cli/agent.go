package cli

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"huddle/protocol"
	"huddle/team"
)

func agentFlags(fs *flag.FlagSet) runFunc {
	misbehave := fs.Int("misbehave", 0, "misbehave on every `N`-th message or invocation: a line that is not an action, or an answer without a status (0: never)")
	return func(cl *cmdline) int { return runAgent(cl, *misbehave) }
}

// runAgent runs a built-in exec teammate, so the demo and the tests use the
// exec runtime without another language installed.
func runAgent(cl *cmdline, misbehave int) int {
	if code, ok := cl.wantArgs(1, 1, "an agent (echo)"); !ok {
		return code
	}
	if cl.args[0] != "echo" {
		return cl.usageError("no agent %q: want echo", cl.args[0])
	}
	return echoAgent(os.Stdin, cl.stdout, cl.stderr, misbehave)
}

// echoAgent answers every message with an echo and every invocation with an
// "audited" summary, and approves every shutdown.
func echoAgent(in io.Reader, out, log io.Writer, misbehave int) int {
	enc := json.NewEncoder(out)
	say := func(a team.ExecLine) {
		if err := enc.Encode(a); err != nil {
			fmt.Fprintln(log, "echo agent:", err)
		}
	}
	say(team.ExecLine{Kind: "status", Status: "idle", Activity: "listening"})
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
			say(team.ExecLine{Kind: "send", To: m.From, Content: "echo: " + m.Content})
			if misbehave > 0 && n%misbehave == 0 {
				fmt.Fprintln(out, "this is not an action")
			}
		case protocol.TypeInvocationRequest:
			inv := m.Invocation
			n++
			if misbehave > 0 && n%misbehave == 0 {
				// A malformed answer: no status.
				fmt.Fprintf(out, `{"action":"result","result":{"request_id":%q,"correlation_id":%q,"duration_ms":1}}`+"\n", inv.RequestID, inv.CorrelationID)
				continue
			}
			res, err := protocol.OK(inv, 1, map[string]string{"summary": "audited: " + inv.Prompt})
			if err != nil {
				fmt.Fprintln(log, "echo agent:", err)
				continue
			}
			say(team.ExecLine{Kind: "result", Result: &res})
		case protocol.TypeShutdownRequest:
			say(team.ExecLine{Kind: "shutdown_response", RequestID: m.RequestID, Approve: protocol.Bool(true), Reason: "echo agent stopping"})
			return exitOK
		}
	}
	return exitOK
}
