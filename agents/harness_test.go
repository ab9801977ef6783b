package agents_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"huddle/agents"
	"huddle/internal/testkit"
	"huddle/protocol"
)

// harness runs an adapter in this process as huddle would, on pipes: the
// test writes huddle's messages to its stdin and reads its lines.
type harness struct {
	t     *testing.T
	fake  *fake
	stdin *io.PipeWriter
	lines chan protocol.ExecLine
	seen  []protocol.ExecLine // every line read so far
	log   *testkit.Buffer
	done  chan error
}

const task = "add a --verbose flag"

func startAdapter(t *testing.T, f *fake, cliName string, extra ...string) *harness {
	t.Helper()
	return startAdapterIn(t, "", f, cliName, extra...)
}

// startAdapterIn starts an adapter whose team directory is teamDir.
func startAdapterIn(t *testing.T, teamDir string, f *fake, cliName string, extra ...string) *harness {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &harness{t: t, fake: f, stdin: inW, lines: make(chan protocol.ExecLine, 64), log: &testkit.Buffer{}, done: make(chan error, 1)}
	c := agents.CLIs[cliName]
	bin, err := c.Bin(f.bin)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		err := agents.Run(ctx, agents.Config{CLI: c, Bin: bin, Task: task, Extra: extra, Dir: "/work/repo", TeamDir: teamDir}, inR, outW, h.log)
		outW.Close()
		h.done <- err
	}()
	go func() {
		defer close(h.lines)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var l protocol.ExecLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Errorf("the adapter wrote a line that is not an ExecLine: %q", sc.Text())
				continue
			}
			h.lines <- l
		}
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		for range h.lines { // drain so the adapter is never blocked writing
		}
		select {
		case <-h.done:
		case <-time.After(20 * time.Second):
			t.Error("the adapter did not stop")
		}
	})
	return h
}

// expect reads lines until one of kind and returns it.
func (h *harness) expect(kind string) protocol.ExecLine {
	h.t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-h.lines:
			if !ok {
				h.t.Fatalf("the adapter ended before a %s line; it wrote %+v; log:\n%s", kind, h.seen, h.log.String())
			}
			h.seen = append(h.seen, l)
			if l.Kind == kind {
				return l
			}
		case <-timeout:
			h.t.Fatalf("no %s line within 20s; it wrote %+v; log:\n%s", kind, h.seen, h.log.String())
		}
	}
}

// expectStatus reads lines until a status line whose activity contains
// want.
func (h *harness) expectStatus(want string) protocol.ExecLine {
	h.t.Helper()
	for {
		l := h.expect("status")
		if strings.Contains(l.Activity, want) {
			return l
		}
	}
}

// ended waits for the adapter to return and gives its error.
func (h *harness) ended() error {
	h.t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-h.lines:
			if ok {
				h.seen = append(h.seen, l)
				continue
			}
			err := <-h.done
			h.done <- err // for the cleanup
			return err
		case <-timeout:
			h.t.Fatalf("the adapter did not end; log:\n%s", h.log.String())
			return nil
		}
	}
}

func (h *harness) send(m protocol.Message) {
	h.t.Helper()
	b, err := protocol.Encode(&m)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.stdin.Write(append(b, '\n')); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) decide(approve bool, feedback string) {
	m := protocol.NewMessage(protocol.TypePlanApprovalResponse, protocol.Lead, "coder")
	m.RequestID, m.Approve, m.Feedback = protocol.NewRequestID(protocol.KindPlan), protocol.Bool(approve), feedback
	h.send(m)
}

func (h *harness) message(from, text string) {
	m := protocol.NewMessage(protocol.TypeMessage, from, "coder")
	m.Content = text
	h.send(m)
}

func (h *harness) shutdown(id string) {
	m := protocol.NewMessage(protocol.TypeShutdownRequest, protocol.Lead, "coder")
	m.RequestID, m.Reason = id, "done for today"
	h.send(m)
}

// usage sums the usage lines seen so far.
func (h *harness) usage() (in, out int64, cost float64) {
	for _, l := range h.seen {
		if l.Kind == "usage" {
			in, out, cost = in+l.TokensIn, out+l.TokensOut, cost+l.CostUSD
		}
	}
	return in, out, cost
}

// hasArgs reports whether args holds want as consecutive elements.
func hasArgs(args []string, want ...string) bool {
	for i := 0; i+len(want) <= len(args); i++ {
		match := true
		for j, w := range want {
			if args[i+j] != w {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// permit answers the permission request id as the runtime would.
func (h *harness) permit(id string, allow bool, feedback string) {
	m := protocol.NewMessage(protocol.TypePermissionResponse, protocol.Lead, "coder")
	m.RequestID, m.Approve, m.Feedback = id, protocol.Bool(allow), feedback
	h.send(m)
}
