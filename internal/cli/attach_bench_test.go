package cli

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"huddle/internal/benchfloor"
	"huddle/internal/testkit"
	"huddle/tui"
)

// BenchmarkAttachIdle runs the real `huddle attach` on a 120×36
// pseudo-terminal against a quiet team directory (huddle init, nothing
// running, nothing changing) and, once its screen is drawn, measures one
// idle window per iteration: cpu-% is the CPU time of all its threads
// (/proc/PID/task/*/schedstat, nanoseconds) over the wall time, wakeups/s
// their context switches (voluntary and not, /proc/PID/task/*/status) per
// second.
//
// Its floor runs beside it through the same windows, measured the same
// way: this test binary started again as a process that does nothing but
// a time.Ticker at the UI's frame rate (tui.FPS), which is what Bubble
// Tea's renderer would cost at rest if it kept ticking (before v2.2.0 it
// ticked for the program's whole life; now it stops half a second after
// the last change). floor-cpu-% and floor-wakeups/s are its figures,
// cpu-ratio attach ÷ floor, and cpu-above-floor-% what huddle adds.
//
// The second floor runs beside them the same way: this test binary
// started again on a pty of the same size as the least Bubble Tea program
// (teaFloor), a static screen at the same frame rate: what the UI costs at
// rest for being a Bubble Tea program. tea-cpu-% is its figure, tea-ratio
// attach ÷ it.
//
// Then it presses tab (the focus moves to the next pane, so the screen
// changes) 20 times, each just after the clock's write, and reports
// key-ms, the median and p95 time from the keystroke to the first byte
// the terminal gets back: what the renderer's frame rate costs a person
// typing.
//
//	go test -run '^$' -bench AttachIdle -benchtime 3x -count 3 ./internal/cli
func BenchmarkAttachIdle(b *testing.B) {
	p := attachQuietTeam(b)
	p.waitFor(b, "attached to")
	pid := p.cmd.Process.Pid
	floor := startTickerFloor(b, tui.FPS)
	teaRun := startProgramOnPTY(b, os.Args[0], b.TempDir(), []string{teaFloorEnv + "=" + strconv.Itoa(tui.FPS)}, nil)
	teaRun.waitFor(b, "floor")
	teaPID := teaRun.cmd.Process.Pid
	settle(b, p)
	const window = 3 * time.Second
	var cpu, floorCPU, teaCPU time.Duration
	var switches, floorSwitches int64
	b.ResetTimer()
	for range b.N {
		cpu0, sw0 := taskUsage(b, pid)
		fcpu0, fsw0 := taskUsage(b, floor)
		tcpu0, _ := taskUsage(b, teaPID)
		// The window is the measurement: nothing to wait for, both
		// processes are meant to be idle throughout.
		<-time.After(window)
		cpu1, sw1 := taskUsage(b, pid)
		fcpu1, fsw1 := taskUsage(b, floor)
		tcpu1, _ := taskUsage(b, teaPID)
		teaCPU += tcpu1 - tcpu0
		cpu += cpu1 - cpu0
		switches += sw1 - sw0
		floorCPU += fcpu1 - fcpu0
		floorSwitches += fsw1 - fsw0
	}
	b.StopTimer()
	wall := time.Duration(b.N) * window
	pct := func(d time.Duration) float64 { return 100 * d.Seconds() / wall.Seconds() }
	b.ReportMetric(pct(cpu), "cpu-%")
	b.ReportMetric(float64(switches)/wall.Seconds(), "wakeups/s")
	b.ReportMetric(pct(floorCPU), "floor-cpu-%")
	b.ReportMetric(float64(floorSwitches)/wall.Seconds(), "floor-wakeups/s")
	b.ReportMetric(pct(cpu)-pct(floorCPU), "cpu-above-floor-%")
	if floorCPU > 0 {
		b.ReportMetric(cpu.Seconds()/floorCPU.Seconds(), "cpu-ratio")
	}
	b.ReportMetric(pct(teaCPU), "tea-cpu-%")
	if teaCPU > 0 {
		b.ReportMetric(cpu.Seconds()/teaCPU.Seconds(), "tea-ratio")
	}
	keys := keystrokeLatencies(b, p, 20)
	b.ReportMetric(ms(keys[len(keys)/2]), "key-p50-ms")
	b.ReportMetric(ms(keys[len(keys)*95/100]), "key-p95-ms")
	p.typeKeys(b, "q")
}

// teaFloorEnv, set to a frame rate, starts the test binary as the second
// floor of BenchmarkAttachIdle (TestMain): teaFloor.
const teaFloorEnv = "HUDDLE_TEST_TEA_FLOOR_FPS"

// teaFloor is the least Bubble Tea program: a static full screen of text,
// as wide and tall as the terminal, on the alternate screen, at fps frames
// a second, until q or its terminal ends. It returns the exit code.
func teaFloor(fps string) int {
	n, err := strconv.Atoi(fps)
	if err != nil || n < 1 {
		fmt.Fprintf(os.Stderr, "%s=%q: want a frame rate\n", teaFloorEnv, fps)
		return 2
	}
	if _, err := tea.NewProgram(teaStill{}, tea.WithFPS(n)).Run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// teaStill is teaFloor's model: it draws the same screen every time.
type teaStill struct{ w, h int }

func (m teaStill) Init() tea.Cmd { return nil }

func (m teaStill) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
	case tea.KeyPressMsg:
		if msg.String() == "q" {
			return m, tea.Quit
		}
	}
	return m, nil
}

func (m teaStill) View() tea.View {
	line := strings.Repeat("·", max(m.w-6, 0))
	rows := make([]string, max(m.h, 1))
	for i := range rows {
		rows[i] = line
	}
	rows[0] = "floor " + line
	v := tea.NewView(strings.Join(rows, "\n"))
	v.AltScreen = true
	return v
}

// tickerFloorEnv, set to a frame rate, starts the test binary as the floor
// of BenchmarkAttachIdle (TestMain) instead of running the tests.
const tickerFloorEnv = "HUDDLE_TEST_TICKER_FLOOR_FPS"

// startTickerFloor starts the floor at fps frames a second and returns its
// pid; the benchmark's cleanup ends it.
func startTickerFloor(b *testing.B, fps int) int {
	b.Helper()
	return benchfloor.StartChild(b, tickerFloorEnv+"="+strconv.Itoa(fps)).Cmd.Process.Pid
}

// tickerFloor is the floor process: a time.Ticker at fps ticks a second
// and nothing else, as a renderer that ticks with nothing to draw would,
// until its standard input ends. It returns the exit code.
func tickerFloor(fps string) int {
	n, err := strconv.Atoi(fps)
	if err != nil || n < 1 {
		fmt.Fprintf(os.Stderr, "%s=%q: want a frame rate\n", tickerFloorEnv, fps)
		return 2
	}
	done := make(chan struct{})
	go func() { // owner: tickerFloor; ends when the benchmark closes stdin
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(done)
	}()
	t := time.NewTicker(time.Second / time.Duration(n))
	defer t.Stop()
	for {
		select {
		case <-done:
			return 0
		case <-t.C:
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// attachQuietTeam starts the real `huddle attach` on a pty on a team
// where nothing runs and nothing changes: huddle init's.
func attachQuietTeam(t testing.TB) *ptyRun {
	t.Helper()
	dir := filepath.Join(t.TempDir(), ".huddle")
	if out, err := exec.Command(huddleBinary(t), "init", "--dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("huddle init: %v: %s", err, out)
	}
	return startOnPTY(t, t.TempDir(), nil, nil, "attach", "--dir", dir)
}

// settle waits until the roster is drawn from the first snapshot and the
// screen has had no new output for 300 ms.
func settle(b testing.TB, p *ptyRun) {
	b.Helper()
	p.waitFor(b, "not started")
	quiet(b, p, 300*time.Millisecond)
}

// quiet waits until the terminal has had no new output for d.
func quiet(b testing.TB, p *ptyRun, d time.Duration) {
	b.Helper()
	last, since := len(p.output()), time.Now()
	testkit.WaitFor(b, 20*time.Second, "the screen to settle", func() bool {
		if n := len(p.output()); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= d
	})
}

// grown waits, polling every millisecond, until the terminal has more than
// before bytes, and says how long that took.
func grown(b testing.TB, p *ptyRun, before int, within time.Duration) time.Duration {
	b.Helper()
	t0 := time.Now()
	for len(p.output()) <= before {
		if time.Since(t0) > within {
			b.Fatalf("no output for %v (the terminal shows %s)", within, p.outputTail())
		}
		time.Sleep(time.Millisecond)
	}
	return time.Since(t0)
}

// keystrokeLatencies presses tab n times and returns the times from each
// press to the first byte of its answer, sorted. Each press follows at
// least 100 ms without output (an idle screen writes only when its clock's
// minute turns, so the output after it is the answer), and a random part
// of a frame more: a press lands anywhere between two of the renderer's
// ticks, as a person's does, not always at the same phase.
func keystrokeLatencies(b *testing.B, p *ptyRun, n int) []time.Duration {
	b.Helper()
	var out []time.Duration
	for range n {
		quiet(b, p, 100*time.Millisecond+rand.N(time.Second/tui.FPS))
		before := len(p.output())
		p.typeKeys(b, "\t")
		out = append(out, grown(b, p, before, 5*time.Second))
	}
	slices.Sort(out)
	return out
}

// taskUsage sums the CPU time and the context switches of every thread of
// pid, from /proc.
func taskUsage(b testing.TB, pid int) (cpu time.Duration, switches int64) {
	b.Helper()
	tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*"))
	if err != nil || len(tasks) == 0 {
		b.Fatalf("threads of %d: %v", pid, err)
	}
	for _, task := range tasks {
		sched, err := os.ReadFile(filepath.Join(task, "schedstat"))
		if err != nil {
			continue // the thread ended meanwhile
		}
		if f := strings.Fields(string(sched)); len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			cpu += time.Duration(ns)
		}
		status, err := os.ReadFile(filepath.Join(task, "status"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				switches += n
			} else if v, ok := strings.CutPrefix(line, "nonvoluntary_ctxt_switches:"); ok {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				switches += n
			}
		}
	}
	return cpu, switches
}
