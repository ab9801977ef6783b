package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"huddle/internal/testkit"
)

// BenchmarkAttachFirstFrame times `huddle attach` in tmux from the
// command's start to its first frame on the terminal (the roster drawn
// with every member), beside its floor in the same run: `sh -c 'echo
// ready'` in the same pane, timed to "ready". Each iteration runs the
// floor and attach once, each started by respawn-pane in a 120×36 pane of
// a tmux server of the benchmark's own, and timed through a control-mode
// client that tmux hands the pane's output as it arrives (no polling).
// demo is huddle init's team, not running; members=5000 a team of 5,000
// scripted members that has run (their records, inboxes and cursor
// journals on disk) and is down. first-frame-ms and floor-ms are
// medians, ratio their ratio.
//
//	go test -run '^$' -bench AttachFirstFrame -benchtime 20x -count 3 ./internal/cli
func BenchmarkAttachFirstFrame(b *testing.B) {
	if _, err := exec.LookPath("tmux"); err != nil {
		b.Skip("no tmux")
	}
	b.Run("demo", func(b *testing.B) {
		dir := filepath.Join(b.TempDir(), ".huddle")
		if out, err := exec.Command(huddleBinary(b), "init", "--dir", dir).CombinedOutput(); err != nil {
			b.Fatalf("huddle init: %v: %s", err, out)
		}
		firstFrames(b, dir, "Roster (4)", "not started")
	})
	b.Run("members=5000", func(b *testing.B) {
		dir := bigTeam(b, 5000)
		firstFrames(b, dir, "Roster (5000)", "m0000")
	})
}

// firstFrames runs the floor and attach alternately b.N times, attach
// timed until the terminal has shown every marker.
func firstFrames(b *testing.B, dir string, markers ...string) {
	tm := startTmux(b)
	var floor, attach []time.Duration
	b.ResetTimer()
	for range b.N {
		floor = append(floor, tm.firstFrame(b, "sh -c 'echo ready; exec sleep 100'", "ready"))
		attach = append(attach, tm.firstFrame(b, huddleBinary(b)+" attach --dir "+dir, markers...))
	}
	b.StopTimer()
	f, a := median(floor), median(attach)
	b.ReportMetric(ms(f), "floor-ms")
	b.ReportMetric(ms(a), "first-frame-ms")
	b.ReportMetric(a.Seconds()/f.Seconds(), "ratio")
}

// bigTeam makes a team of n scripted members in a temp directory, runs it
// with huddle up --headless until team_started, and stops it: what a team
// that ran leaves on disk.
func bigTeam(b *testing.B, n int) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), ".huddle")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	type step struct {
		Work     string `json:"work"`
		Activity string `json:"activity"`
	}
	type member struct {
		Name    string `json:"name"`
		Role    string `json:"role"`
		Runtime struct {
			Kind  string `json:"kind"`
			Steps []step `json:"steps"`
		} `json:"runtime"`
	}
	team := struct {
		Name    string   `json:"name"`
		Members []member `json:"members"`
	}{Name: "big"}
	for i := range n {
		m := member{Name: fmt.Sprintf("m%04d", i), Role: "worker"}
		m.Runtime.Kind = "script"
		m.Runtime.Steps = []step{{Work: "1h", Activity: "working"}}
		team.Members = append(team.Members, m)
	}
	data, err := json.Marshal(team)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "team.json"), data, 0o600); err != nil {
		b.Fatal(err)
	}
	up := exec.Command(huddleBinary(b), "up", "--dir", dir, "--headless")
	out, err := up.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := up.Start(); err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() && !strings.Contains(sc.Text(), `"team_started"`) {
	}
	if err := up.Process.Signal(os.Interrupt); err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, out)
	if err := up.Wait(); err != nil {
		b.Fatalf("huddle up: %v", err)
	}
	return dir
}

// tmuxBench is a tmux server of the benchmark's own with one 120×36 pane
// and a control-mode client reading what the pane shows.
type tmuxBench struct {
	socket string
	mu     sync.Mutex
	last   time.Time     // when the pane's output last grew
	grew   chan struct{} // a token each time it grows
}

func startTmux(b *testing.B) *tmuxBench {
	b.Helper()
	tm := &tmuxBench{socket: fmt.Sprintf("huddle-bench-%d", os.Getpid()), grew: make(chan struct{}, 1)}
	tmux := func(args ...string) {
		b.Helper()
		if out, err := exec.Command("tmux", append([]string{"-L", tm.socket, "-f", "/dev/null"}, args...)...).CombinedOutput(); err != nil {
			b.Fatalf("tmux %v: %v: %s", args, err, out)
		}
	}
	tmux("new-session", "-d", "-s", "b", "-x", "120", "-y", "36", "sleep 1000")
	b.Cleanup(func() { _ = exec.Command("tmux", "-L", tm.socket, "kill-server").Run() })
	tmux("set-option", "-g", "window-size", "manual")
	tmux("resize-window", "-t", "b", "-x", "120", "-y", "36")
	ctl := exec.Command("tmux", "-L", tm.socket, "-C", "attach", "-t", "b")
	stdin, err := ctl.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := ctl.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := ctl.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		_ = ctl.Process.Kill()
		_ = ctl.Wait()
	})
	go func() { // owner: the benchmark; ends when the client does
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			if !strings.HasPrefix(sc.Text(), "%output ") {
				continue
			}
			tm.mu.Lock()
			tm.last = time.Now()
			tm.mu.Unlock()
			select {
			case tm.grew <- struct{}{}:
			default:
			}
		}
	}()
	return tm
}

// idle ends what the pane runs and waits until it has exited, so that
// nothing writes in the team directory while the benchmark removes it.
func (tm *tmuxBench) idle(b *testing.B) {
	b.Helper()
	out, err := exec.Command("tmux", "-L", tm.socket, "display-message", "-p", "-t", "b", "#{pane_pid}").Output()
	if err != nil {
		b.Fatalf("pane pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		b.Fatalf("pane pid %q: %v", out, err)
	}
	if out, err := exec.Command("tmux", "-L", tm.socket, "respawn-pane", "-k", "-t", "b", "sleep 1000").CombinedOutput(); err != nil {
		b.Fatalf("respawn-pane: %v: %s", err, out)
	}
	testkit.WaitFor(b, 10*time.Second, "the pane's process to exit", func() bool {
		return syscall.Kill(pid, 0) != nil
	})
}

// firstFrame respawns the pane with command and returns the time from
// the respawn until the pane shows every marker: the screen is read
// (capture-pane) each time output arrives, and the time taken is that of
// the last output before the read that found them (a renderer that draws
// only what changed never writes a marker whole).
func (tm *tmuxBench) firstFrame(b *testing.B, command string, markers ...string) time.Duration {
	b.Helper()
	tm.mu.Lock()
	tm.last = time.Time{}
	tm.mu.Unlock()
	t0 := time.Now()
	if out, err := exec.Command("tmux", "-L", tm.socket, "respawn-pane", "-k", "-t", "b", command).CombinedOutput(); err != nil {
		b.Fatalf("respawn-pane: %v: %s", err, out)
	}
	deadline := time.After(30 * time.Second)
	var screen []byte
	for {
		select {
		case <-tm.grew:
		case <-deadline:
			b.Fatalf("%s: no first frame with %q in 30s; the pane shows %s", command, markers, screen)
		}
		out, err := exec.Command("tmux", "-L", tm.socket, "capture-pane", "-p", "-t", "b").Output()
		if err != nil {
			b.Fatalf("capture-pane: %v", err)
		}
		tm.mu.Lock()
		last := tm.last
		tm.mu.Unlock()
		screen = out
		all := !last.IsZero()
		for _, m := range markers {
			all = all && strings.Contains(string(out), m)
		}
		if all {
			d := last.Sub(t0)
			tm.idle(b) // nothing of this run left running through the next
			return d
		}
	}
}
