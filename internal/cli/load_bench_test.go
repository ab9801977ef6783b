package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"huddle/inbox"
	"huddle/protocol"
)

// BenchmarkAttachUnderLoad runs a team of two scripted members with
// `huddle up --headless` and `huddle attach` on a 120×36 pseudo-terminal
// beside it, and appends messages to one member's inbox from this
// process at 200 and at 1,000 a second for a 5 s window per iteration, after an idle
// window of the same length. From /proc (all threads' CPU time) it
// reports each process's CPU per delivered message above its own idle
// (ui-us/msg: attach, which reads and shows each message; runtime-us/msg:
// the runtime, whose consumer handles and commits it) and their ratio,
// ui/runtime: what showing a message costs beside delivering it.
//
//	go test -run '^$' -bench AttachUnderLoad -benchtime 2x -count 3 ./internal/cli
func BenchmarkAttachUnderLoad(b *testing.B) {
	for _, rate := range []int{200, 1000} {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) { attachUnderLoad(b, rate) })
	}
}

func attachUnderLoad(b *testing.B, rate int) {
	dir := filepath.Join(b.TempDir(), ".huddle")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	spec := `{"name":"load","members":[` +
		`{"name":"a","role":"reads","runtime":{"kind":"script","steps":[{"wait":"1h"}]}},` +
		`{"name":"b","role":"writes","runtime":{"kind":"script","steps":[{"wait":"1h"}]}}]}`
	if err := os.WriteFile(filepath.Join(dir, "team.json"), []byte(spec), 0o600); err != nil {
		b.Fatal(err)
	}
	up := exec.Command(huddleBinary(b), "up", "--dir", dir, "--headless")
	up.Env = append(os.Environ(), "HUDDLE_DIR=", "HUDDLE_STORE=")
	out, err := up.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := up.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = up.Process.Signal(os.Interrupt)
		_ = up.Wait()
	})
	sc := bufio.NewScanner(out)
	for sc.Scan() && !strings.Contains(sc.Text(), `"team_started"`) {
	}
	go func() { _, _ = io.Copy(io.Discard, out) }() // owner: the runtime; ends with it
	p := startOnPTY(b, b.TempDir(), nil, nil, "attach", "--dir", dir)
	p.waitFor(b, "attached to")
	p.waitFor(b, "waiting")
	quiet(b, p, 300*time.Millisecond)
	ui, rt := p.cmd.Process.Pid, up.Process.Pid

	const window = 5 * time.Second
	var uiNet, rtNet time.Duration
	var sent int
	b.ResetTimer()
	for range b.N {
		ui0, _ := taskUsage(b, ui)
		rt0, _ := taskUsage(b, rt)
		<-time.After(window) // idle: the baseline
		ui1, _ := taskUsage(b, ui)
		rt1, _ := taskUsage(b, rt)
		tick := time.NewTicker(time.Second / time.Duration(rate))
		end := time.After(window)
	send:
		for {
			select {
			case <-end:
				break send
			case <-tick.C:
				m := protocol.NewMessage(protocol.TypeMessage, "b", "a")
				m.Content = "a message of about the size of a short sentence, " + m.ID
				if err := inbox.Append(dir, "a", &m); err != nil {
					b.Fatal(err)
				}
				sent++
			}
		}
		tick.Stop()
		ui2, _ := taskUsage(b, ui)
		rt2, _ := taskUsage(b, rt)
		uiNet += (ui2 - ui1) - (ui1 - ui0)
		rtNet += (rt2 - rt1) - (rt1 - rt0)
	}
	b.StopTimer()
	waitCommitted(b, dir, "a", sent)
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(sent) }
	b.ReportMetric(per(uiNet), "ui-us/msg")
	b.ReportMetric(per(rtNet), "runtime-us/msg")
	if rtNet > 0 {
		b.ReportMetric(uiNet.Seconds()/rtNet.Seconds(), "ui/runtime")
	}
	p.typeKeys(b, "q")
}

// waitCommitted waits until member's consumer has handled n messages or
// more: the runtime delivered every message the benchmark counts.
func waitCommitted(b *testing.B, dir, member string, n int) {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, err := os.ReadFile(filepath.Join(dir, "inbox", member+".jsonl"))
		if err != nil {
			b.Fatal(err)
		}
		c, err := inbox.Committed(dir, member)
		if err != nil {
			b.Fatal(err)
		}
		if c > 0 && int64(len(data)) <= c {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: %d of %d bytes committed after 30s", member, c, len(data))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
