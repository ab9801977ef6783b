package cli

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"huddle/agents"
	"huddle/protocol"
)

func agentFlags(fs *flag.FlagSet) runFunc {
	misbehave := fs.Int("misbehave", 0, "echo: misbehave on every `N`-th message or invocation: a line that is not an action, or an answer without a status (0: never)")
	task := fs.String("task", "", "claude, codex: the `TEXT` of the task to plan, then carry out once the lead approves")
	bin := fs.String("bin", "", "claude, codex: the CLI's `PATH` (default $HUDDLE_CLAUDE_BIN or $HUDDLE_CODEX_BIN, else claude or codex on PATH)")
	return func(cl *Cmdline) int { return runAgent(cl, *misbehave, *task, *bin) }
}

// runAgent runs a built-in exec teammate: echo, so the demo and the tests
// use the exec runtime without another language installed, or an adapter
// of a coding agent's CLI (package agents).
func runAgent(cl *Cmdline, misbehave int, task, bin string) int {
	if code, ok := cl.WantArgs(1, -1, "an agent (echo, claude or codex)"); !ok {
		return code
	}
	name := cl.Args[0]
	if name == "echo" {
		if len(cl.Args) > 1 {
			return cl.UsageError("unexpected argument %q", cl.Args[1])
		}
		if cl.FlagGiven("task") || cl.FlagGiven("bin") {
			return cl.UsageError("--task and --bin are for claude and codex, not echo")
		}
		return echoAgent(os.Stdin, cl.Stdout, cl.Stderr, misbehave)
	}
	c, ok := agents.CLIs[name]
	if !ok {
		return cl.UsageError("no agent %q: want echo, claude or codex", name)
	}
	if cl.FlagGiven("misbehave") {
		return cl.UsageError("--misbehave is for echo, not %s", name)
	}
	if strings.TrimSpace(task) == "" {
		return cl.UsageError("--task is required")
	}
	path, err := c.Bin(bin)
	if err != nil {
		return cl.Fail(err)
	}
	ctx, stop := SignalContext() // huddle stops a member with SIGINT: the CLI's turn is killed with it
	defer stop()
	cfg := agents.Config{CLI: c, Bin: path, Task: task, Extra: cl.Args[1:], TeamDir: os.Getenv("HUDDLE_DIR")}
	if err := agents.Run(ctx, cfg, os.Stdin, cl.Stdout, cl.Stderr); err != nil {
		return cl.Fail(err)
	}
	return ExitOK
}

// echoAgent answers every message with an echo and every invocation with an
// "audited" summary, and approves every shutdown.
func echoAgent(in io.Reader, out, log io.Writer, misbehave int) int {
	enc := json.NewEncoder(out)
	say := func(a protocol.ExecLine) {
		if err := enc.Encode(a); err != nil {
			fmt.Fprintln(log, "echo agent:", err)
		}
	}
	say(protocol.ExecLine{Kind: "status", Status: "idle", Activity: "listening"})
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
			say(protocol.ExecLine{Kind: "send", To: m.From, Content: "echo: " + m.Content})
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
			say(protocol.ExecLine{Kind: "result", Result: &res})
		case protocol.TypeShutdownRequest:
			say(protocol.ExecLine{Kind: "shutdown_response", RequestID: m.RequestID, Approve: protocol.Bool(true), Reason: "echo agent stopping"})
			return ExitOK
		}
	}
	return ExitOK
}
