package inbox

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"huddle/protocol"
)

const (
	// busWriters is the number of writer processes.
	busWriters = 4
	// busPace is how often each writer sends one message to every
	// destination: 4 writers × 500 rounds/s = 2,000 messages/s per system.
	busPace = 2 * time.Millisecond
	// busWriterEnv carries the writer's settings to the re-executed test
	// binary (see TestBusCompareWriter).
	busWriterEnv = "HUDDLE_BUSCOMPARE_WRITER"
	// busReportPrefix starts the line a writer prints with its append costs.
	busReportPrefix = "buscompare-appends "
)

// busPolls are the poll intervals of the learn-claude-code readers, and the
// names their metrics carry.
var busPolls = []struct {
	name  string
	every time.Duration
}{{"1ms", time.Millisecond}, {"1s", time.Second}, {"5s", 5 * time.Second}}

// busWriterConfig is what a writer process is told through busWriterEnv.
type busWriterConfig struct {
	Name     string   // the writer's name, the prefix of its message keys
	N        int      // messages per destination
	HuddleTo string   // the team directory huddle's Append writes under
	BusTo    []string // the bus inbox files, one per poll interval
	FloorTo  string   // the plain file the floor tails
}

// busLine is one line of the learn-claude-code bus: json.dumps of
// {"type", "from", "content", "timestamp"} with a float-seconds timestamp.
type busLine struct {
	Type      string  `json:"type"`
	From      string  `json:"from"`
	Content   string  `json:"content"`
	Timestamp float64 `json:"timestamp"`
}

// BenchmarkBusCompare sets huddle's inbox beside the message bus of
// learn-claude-code under one load, in one run: four writer processes send
// every message to huddle's inbox (Append, read by a watching consumer), to
// three copies of the learn-claude-code bus (read by pollers sleeping 1 ms,
// 1 s and 5 s between reads) and to a plain file tailed on fsnotify events
// (the floor: the least any watching reader can do).
//
// The bus is written here from its described semantics, as read in
// shareAI-lab/learn-claude-code, agents/s09_agent_teams.py (commit
// 3481aea5c605ec979cddf5921c227ba5fd1f28b3), class MessageBus:
//   - send: `with open(inbox_path, "a") as f: f.write(json.dumps(msg) + "\n")`,
//     msg = {"type", "from", "content", "timestamp": time.time()}, one file
//     .team/inbox/<name>.jsonl per member, no lock;
//   - read_inbox: `inbox_path.read_text()`, json.loads of each line, then
//     `inbox_path.write_text("")` (a truncate), no lock: a line appended
//     between the read and the truncate is gone.
//
// agents/s11_autonomous_agents.py (commit 57cfcf872effadff21338a104e007673afbb0ec1)
// polls that bus with `time.sleep(POLL_INTERVAL)`, POLL_INTERVAL = 5 (seconds),
// while a teammate is idle; issue 11 names 1 s as the poll of Claude Code's
// teams, and 1 ms is the best a poller could do.
//
// Reported, per system: the p50 and p99 from the writer's clock before its
// append to the reader having the message, the messages lost (sent minus
// distinct received), and the ratios of each bus to huddle and of huddle to
// the floor; and the mean time of one append call, huddle's and the bus's.
//
// Run it (about 18 s a count: Go's first run of b.N = 1 waits one 5 s poll,
// then 8 s of sending and up to one more 5 s poll):
//
//	go test -run '^$' -bench BusCompare -benchtime 4000x -count 3 ./inbox
//
// b.N is the number of messages each writer sends to each of the five
// destinations, one round every busPace; -benchtime 1x is a smoke run.
func BenchmarkBusCompare(b *testing.B) {
	root := b.TempDir()
	cfg := busWriterConfig{N: b.N, HuddleTo: filepath.Join(root, "huddle"), FloorTo: filepath.Join(root, "floor", "lead.jsonl")}
	for _, p := range busPolls {
		cfg.BusTo = append(cfg.BusTo, filepath.Join(root, "bus"+p.name, "inbox", protocol.Lead+".jsonl"))
	}
	for _, p := range append([]string{cfg.FloorTo}, cfg.BusTo...) {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			b.Fatal(err)
		}
	}
	want := busWriters * b.N
	// Every reader stops and is waited for on the way out, a failure's too.
	ctx, cancel := context.WithCancel(context.Background())
	var readersWG sync.WaitGroup
	defer readersWG.Wait()
	defer cancel()

	huddle := newBusTally(want)
	w, err := NewWatcher(ctx, cfg.HuddleTo, Options{})
	if err != nil {
		b.Fatal(err)
	}
	closeWatcher := sync.OnceValue(w.Close)
	defer closeWatcher() // its error is checked below, on the way out of a run that did not fail
	if err := w.Consume(protocol.Lead, func(_ context.Context, d Delivery) error {
		huddle.receive(d.Msg.Content, time.Now())
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	floor := newBusTally(want)
	var floorErr error
	readersWG.Go(func() { floorErr = tailFloor(ctx, cfg.FloorTo, floor) })
	var readers []*busReader
	for i, p := range busPolls {
		r := &busReader{path: cfg.BusTo[i], every: p.every, tally: newBusTally(want), done: make(chan struct{})}
		readers = append(readers, r)
		readersWG.Go(func() { r.run(ctx) })
	}

	b.ResetTimer()
	appends := runBusWriters(b, cfg)
	sendEnd := time.Now()
	for _, r := range readers {
		r.finishAfter(sendEnd)
	}
	b.StopTimer()

	waitBusTally(b, huddle, 30*time.Second, "huddle")
	waitBusTally(b, floor, 30*time.Second, "the floor")
	for i, r := range readers {
		select {
		case <-r.done:
		case <-time.After(busPolls[i].every + 30*time.Second):
			b.Fatalf("the %s bus reader did not finish its last poll", busPolls[i].name)
		}
		if r.err != nil {
			b.Fatalf("the %s bus reader: %v", busPolls[i].name, r.err)
		}
	}
	cancel()
	readersWG.Wait()
	if err := closeWatcher(); err != nil {
		b.Fatal(err)
	}
	if floorErr != nil {
		b.Fatal(floorErr)
	}
	reportBusCompare(b, huddle, floor, readers, appends)
}

// reportBusCompare reports the latencies and losses of every system and
// their ratios to huddle's.
func reportBusCompare(b *testing.B, huddle, floor *busTally, readers []*busReader, appends busAppendCost) {
	b.ReportMetric(0, "ns/op") // the wall time of a paced run says nothing
	hp50, hp99 := huddle.percentile(50), huddle.percentile(99)
	b.ReportMetric(hp50, "huddle-p50-us")
	b.ReportMetric(hp99, "huddle-p99-us")
	b.ReportMetric(float64(huddle.lost()), "huddle-lost")
	b.ReportMetric(floor.percentile(50), "floor-p50-us")
	b.ReportMetric(floor.percentile(99), "floor-p99-us")
	b.ReportMetric(ratio(hp50, floor.percentile(50)), "p50-ratio-floor")
	b.ReportMetric(ratio(hp99, floor.percentile(99)), "p99-ratio-floor")
	for i, r := range readers {
		name := busPolls[i].name
		p50, p99 := r.tally.percentile(50), r.tally.percentile(99)
		b.ReportMetric(p50, "bus"+name+"-p50-us")
		b.ReportMetric(p99, "bus"+name+"-p99-us")
		b.ReportMetric(float64(r.tally.lost()), "bus"+name+"-lost")
		b.ReportMetric(100*float64(r.tally.lost())/float64(r.tally.want), "bus"+name+"-lost-pct")
		b.ReportMetric(ratio(p50, hp50), "lat-ratio-"+name)
		b.ReportMetric(ratio(p99, hp99), "p99-ratio-"+name)
		if r.tally.torn > 0 {
			b.Logf("the %s bus read %d torn lines (counted as lost; json.loads would have raised)", name, r.tally.torn)
		}
	}
	if huddle.dup > 0 {
		b.Logf("huddle delivered %d messages twice", huddle.dup)
	}
	b.ReportMetric(appends.huddleUS(), "huddle-append-us")
	b.ReportMetric(appends.busUS(), "bus-append-us")
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// busTally counts what one system delivered: each message key once, with
// its latency from the writer's clock reading just before its append to the
// reader having it.
type busTally struct {
	want int
	all  chan struct{} // closed when every key has arrived

	mu   sync.Mutex
	seen map[string]bool
	lat  []time.Duration
	dup  int
	torn int
}

func newBusTally(want int) *busTally {
	return &busTally{want: want, all: make(chan struct{}), seen: make(map[string]bool, want)}
}

// receive records content "<key> <sent unix ns>" received at.
func (t *busTally) receive(content string, at time.Time) {
	key, sent, ok := parseBusContent(content)
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case !ok:
		t.torn++
	case t.seen[key]:
		t.dup++
	default:
		t.seen[key] = true
		t.lat = append(t.lat, at.Sub(time.Unix(0, sent)))
		if len(t.seen) == t.want {
			close(t.all)
		}
	}
}

func (t *busTally) markTorn() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.torn++
}

func (t *busTally) lost() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.want - len(t.seen)
}

func (t *busTally) percentile(p int) float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return pct(t.lat, p)
}

func busContent(key string, sent time.Time) string {
	return key + " " + strconv.FormatInt(sent.UnixNano(), 10)
}

func parseBusContent(s string) (key string, sentNS int64, ok bool) {
	key, ns, found := strings.Cut(s, " ")
	if !found {
		return "", 0, false
	}
	sentNS, err := strconv.ParseInt(ns, 10, 64)
	return key, sentNS, err == nil
}

// waitBusTally waits until t has every key or the deadline passes; what is
// missing then is lost.
func waitBusTally(b *testing.B, t *busTally, within time.Duration, what string) {
	select {
	case <-t.all:
	case <-time.After(within):
		b.Logf("%s: %d of %d messages still missing after %v", what, t.lost(), t.want, within)
	}
}

// busReader is learn-claude-code's reader: sleep, read_inbox, again. It
// stops after the first poll that started after finishAfter's time.
type busReader struct {
	path  string
	every time.Duration
	tally *busTally
	end   atomic.Pointer[time.Time]
	done  chan struct{}
	err   error // the first read or truncate error; read after done
}

func (r *busReader) finishAfter(t time.Time) { r.end.Store(&t) }

func (r *busReader) run(ctx context.Context) {
	defer close(r.done)
	timer := time.NewTimer(r.every)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		start := time.Now()
		r.readInbox()
		if end := r.end.Load(); end != nil && start.After(*end) {
			return
		}
		timer.Reset(r.every)
	}
}

// readInbox is MessageBus.read_inbox: read the whole file, parse each line,
// then truncate the file to nothing, with no lock. The messages count as
// received when read_inbox would return them, after the truncate.
func (r *busReader) readInbox() {
	data, err := os.ReadFile(r.path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		r.err = cmp.Or(r.err, err)
		return
	}
	var msgs []busLine
	for line := range bytes.Lines(bytes.TrimSpace(data)) {
		var m busLine
		if err := json.Unmarshal(line, &m); err != nil {
			r.tally.markTorn()
			continue
		}
		msgs = append(msgs, m)
	}
	if err := os.WriteFile(r.path, nil, 0o600); err != nil {
		r.err = cmp.Or(r.err, err)
	}
	at := time.Now()
	for _, m := range msgs {
		r.tally.receive(m.Content, at)
	}
}

// tailFloor follows the plain file at path on fsnotify events, reading each
// new complete line as it lands, until ctx ends.
func tailFloor(ctx context.Context, path string, t *busTally) error {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer fw.Close()
	if err := fw.Add(filepath.Dir(path)); err != nil {
		return err
	}
	var off int64
	var partial []byte
	buf := make([]byte, 64<<10)
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-fw.Errors:
			return err
		case <-fw.Events:
		}
		f, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		for {
			n, err := f.ReadAt(buf, off)
			off += int64(n)
			partial = append(partial, buf[:n]...)
			if err == io.EOF || n == 0 {
				break
			}
			if err != nil {
				f.Close()
				return err
			}
		}
		f.Close()
		at := time.Now()
		for {
			i := bytes.IndexByte(partial, '\n')
			if i < 0 {
				break
			}
			t.receive(string(partial[:i]), at)
			partial = partial[i+1:]
		}
	}
}

// busAppendCost is the time the writers spent inside appends.
type busAppendCost struct {
	huddleNS, busNS, huddleN, busN int64
}

func (c busAppendCost) huddleUS() float64 {
	return float64(c.huddleNS) / float64(max(c.huddleN, 1)) / 1e3
}
func (c busAppendCost) busUS() float64 { return float64(c.busNS) / float64(max(c.busN, 1)) / 1e3 }

// runBusWriters runs the writer processes to their end and adds up the
// append costs they report.
func runBusWriters(b *testing.B, cfg busWriterConfig) busAppendCost {
	type proc struct {
		cmd *exec.Cmd
		out bytes.Buffer
	}
	procs := make([]*proc, busWriters)
	for i := range procs {
		c := cfg
		c.Name = fmt.Sprintf("w%d", i)
		env, err := json.Marshal(c)
		if err != nil {
			b.Fatal(err)
		}
		p := &proc{cmd: exec.Command(os.Args[0], "-test.run=^TestBusCompareWriter$", "-test.count=1")}
		p.cmd.Env = append(os.Environ(), busWriterEnv+"="+string(env))
		p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
		if err := p.cmd.Start(); err != nil {
			b.Fatal(err)
		}
		procs[i] = p
	}
	var total busAppendCost
	for i, p := range procs {
		if err := p.cmd.Wait(); err != nil {
			b.Fatalf("writer w%d: %v\n%s", i, err, p.out.String())
		}
		c, err := parseAppendCost(p.out.String())
		if err != nil {
			b.Fatalf("writer w%d: %v\n%s", i, err, p.out.String())
		}
		total.huddleNS += c.huddleNS
		total.busNS += c.busNS
		total.huddleN += c.huddleN
		total.busN += c.busN
	}
	return total
}

func parseAppendCost(out string) (busAppendCost, error) {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), busReportPrefix)
		if !ok {
			continue
		}
		var c busAppendCost
		if _, err := fmt.Sscan(rest, &c.huddleNS, &c.huddleN, &c.busNS, &c.busN); err != nil {
			return c, fmt.Errorf("bad report %q: %w", sc.Text(), err)
		}
		return c, nil
	}
	return busAppendCost{}, errors.New("no append report")
}

// TestBusCompareWriter is the writer process of BenchmarkBusCompare: the
// benchmark runs the test binary again with busWriterEnv set, and only then
// does this do anything. Each round sends message i to the five
// destinations, in an order that rotates with i, each stamped with the
// clock just before its own append; rounds start every busPace.
func TestBusCompareWriter(t *testing.T) {
	env := os.Getenv(busWriterEnv)
	if env == "" {
		t.Skip("the writer process of BenchmarkBusCompare")
	}
	var cfg busWriterConfig
	if err := json.Unmarshal([]byte(env), &cfg); err != nil {
		t.Fatal(err)
	}
	floor, err := os.OpenFile(cfg.FloorTo, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer floor.Close()
	var cost busAppendCost
	sends := []func(key string) error{
		func(key string) error {
			m := protocol.NewMessage(protocol.TypeMessage, cfg.Name, protocol.Lead)
			t0 := time.Now()
			m.Content = busContent(key, t0)
			err := Append(cfg.HuddleTo, protocol.Lead, &m)
			cost.huddleNS += int64(time.Since(t0))
			cost.huddleN++
			return err
		},
		func(key string) error {
			_, err := floor.WriteString(busContent(key, time.Now()) + "\n")
			return err
		},
	}
	for _, p := range cfg.BusTo {
		sends = append(sends, func(key string) error {
			t0 := time.Now()
			err := busSend(p, cfg.Name, busContent(key, t0))
			cost.busNS += int64(time.Since(t0))
			cost.busN++
			return err
		})
	}
	start := time.Now()
	for i := range cfg.N {
		key := fmt.Sprintf("%s:%d", cfg.Name, i)
		for j := range sends {
			if err := sends[(i+j)%len(sends)](key); err != nil {
				t.Fatal(err)
			}
		}
		// Pacing the load, not waiting for a condition: the next round
		// starts busPace after this one did, at once if it is late.
		time.Sleep(time.Until(start.Add(time.Duration(i+1) * busPace)))
	}
	fmt.Printf("%s%d %d %d %d\n", busReportPrefix, cost.huddleNS, cost.huddleN, cost.busNS, cost.busN)
}

// busSend is MessageBus.send: open the inbox for appending, write one JSON
// line, close; no lock.
func busSend(path, from, content string) error {
	line, err := json.Marshal(busLine{Type: "message", From: from, Content: content, Timestamp: float64(time.Now().UnixNano()) / 1e9})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
