package inbox

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"huddle/internal/benchfloor"
	"huddle/protocol"
	"huddle/teamdir"
)

// The benchmarks docs/PERFORMANCE.md lists:
//
//	go test -run '^$' -bench . -benchtime 20000x ./inbox
//
// (BenchmarkConsumerHeap measures 1,000 consumers once per call, whatever
// -benchtime says.)

// benchLine is the content of an ordinary message.
const benchLine = "a message of an ordinary length, about as long as a short status line"

// BenchmarkAppend measures one writer calling Append, one message per call:
// each call opens, locks, writes and closes. It is paired with its floor
// (appendFloor): msgs/s is huddle's rate, floor-msgs/s the floor's, ratio
// the floor's rate over huddle's; ns/op covers one of each.
func BenchmarkAppend(b *testing.B) {
	team := b.TempDir()
	m := msg("alice", "bob", benchLine)
	pairedAppend(b, func() error { return Append(team, "bob", m) })
}

// BenchmarkAppender measures one writer appending through an Appender, one
// message per call: the inbox stays open, each call locks, writes, unlocks.
// It is paired with its floor as BenchmarkAppend is.
func BenchmarkAppender(b *testing.B) {
	a, err := NewAppender(b.TempDir(), "bob")
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	m := msg("alice", "bob", benchLine)
	pairedAppend(b, func() error { return a.Append(m) })
}

// appendBlock is how many calls of one kind run between two clock reads
// in pairedAppend: enough to make the clock's cost vanish, few enough that
// huddle and the floor see the same machine.
const appendBlock = 64

// pairedAppend runs b.N calls of appendOne interleaved, a block at a time,
// with b.N calls of the floor: a plain write(2) of the same line to a file
// opened O_APPEND once, no lock, no stat, no encoding; and of the locked
// floor: the same write between flock LOCK_EX and LOCK_UN, the least an
// append that no compaction may cut in two costs; and of the open floor:
// open, flock LOCK_EX, write, close, the least such an append costs when
// it keeps nothing between calls, as Append keeps nothing. It reports the
// four rates, ratio (the floor's over huddle's), of-floor (huddle's over
// the floor's), of-locked-floor and of-open-floor.
func pairedAppend(b *testing.B, appendOne func() error) {
	b.Helper()
	floor, err := os.OpenFile(filepath.Join(b.TempDir(), "floor.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer floor.Close()
	locked, err := os.OpenFile(filepath.Join(b.TempDir(), "locked.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer locked.Close()
	fd, lfd := int(floor.Fd()), int(locked.Fd())
	opened := filepath.Join(b.TempDir(), "opened.jsonl")
	line := floorLine()
	var huddle, fl, lfl, ofl time.Duration
	var start time.Time // of huddle's current block
	n := 0
	for b.Loop() {
		if n%appendBlock == 0 {
			if n > 0 {
				huddle += time.Since(start)
			}
			t0 := time.Now()
			for range appendBlock {
				if _, err := syscall.Write(fd, line); err != nil {
					b.Fatal(err)
				}
			}
			t1 := time.Now()
			fl += t1.Sub(t0)
			for range appendBlock {
				if err := syscall.Flock(lfd, syscall.LOCK_EX); err != nil {
					b.Fatal(err)
				}
				if _, err := syscall.Write(lfd, line); err != nil {
					b.Fatal(err)
				}
				if err := syscall.Flock(lfd, syscall.LOCK_UN); err != nil {
					b.Fatal(err)
				}
			}
			t2 := time.Now()
			lfl += t2.Sub(t1)
			for range appendBlock {
				ofd, err := syscall.Open(opened, syscall.O_WRONLY|syscall.O_APPEND|syscall.O_CREAT|syscall.O_CLOEXEC, 0o600)
				if err != nil {
					b.Fatal(err)
				}
				if err := syscall.Flock(ofd, syscall.LOCK_EX); err != nil {
					b.Fatal(err)
				}
				if _, err := syscall.Write(ofd, line); err != nil {
					b.Fatal(err)
				}
				if err := syscall.Close(ofd); err != nil {
					b.Fatal(err)
				}
			}
			start = time.Now()
			ofl += start.Sub(t2)
		}
		if err := appendOne(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	huddle += time.Since(start)
	floorN := (n + appendBlock - 1) / appendBlock * appendBlock
	rate, floorRate, lockedRate := float64(n)/huddle.Seconds(), float64(floorN)/fl.Seconds(), float64(floorN)/lfl.Seconds()
	openRate := float64(floorN) / ofl.Seconds()
	b.ReportMetric(rate, "msgs/s")
	b.ReportMetric(floorRate, "floor-msgs/s")
	b.ReportMetric(lockedRate, "locked-floor-msgs/s")
	b.ReportMetric(floorRate/rate, "ratio")
	b.ReportMetric(rate/floorRate, "of-floor")
	b.ReportMetric(rate/lockedRate, "of-locked-floor")
	b.ReportMetric(openRate, "open-floor-msgs/s")
	b.ReportMetric(rate/openRate, "of-open-floor")
}

// BenchmarkAppendParts measures, in one run and a block at a time in
// turn, what one message per call is made of, each part alone on a file of
// its own: write-us (a plain O_APPEND write(2) of the line: the floor),
// flock-unlock-us (flock LOCK_EX then LOCK_UN, uncontended), fstat-us,
// open-close-us (what Append pays besides an Appender's calls), encode-us
// (protocol.Encode of the message). An op is one of each.
func BenchmarkAppendParts(b *testing.B) {
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "parts.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	fd, path := int(f.Fd()), f.Name()
	line := floorLine()
	m := msg("alice", "bob", benchLine)
	var st syscall.Stat_t
	parts := []struct {
		metric string
		run    func() error
		total  time.Duration
	}{
		{metric: "write-us", run: func() error { _, err := syscall.Write(fd, line); return err }},
		{metric: "flock-unlock-us", run: func() error {
			if err := syscall.Flock(fd, syscall.LOCK_EX); err != nil {
				return err
			}
			return syscall.Flock(fd, syscall.LOCK_UN)
		}},
		{metric: "fstat-us", run: func() error { return syscall.Fstat(fd, &st) }},
		{metric: "open-close-us", run: func() error {
			ofd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_APPEND|syscall.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			return syscall.Close(ofd)
		}},
		{metric: "encode-us", run: func() error { _, err := protocol.Encode(m); return err }},
	}
	n := 0
	for b.Loop() {
		if n%appendBlock == 0 {
			for i := range parts {
				t0 := time.Now()
				for range appendBlock {
					if err := parts[i].run(); err != nil {
						b.Fatal(err)
					}
				}
				parts[i].total += time.Since(t0)
			}
		}
		n++
	}
	blocks := float64((n + appendBlock - 1) / appendBlock * appendBlock)
	for _, p := range parts {
		b.ReportMetric(p.total.Seconds()*1e6/blocks, p.metric)
	}
}

// BenchmarkDeliveryParts measures, in one run and a block at a time in
// turn, what a consumer does for one message besides waking up: fstat-us
// (the inbox file's size), pread-us (reading the new line), anchor-us (the
// anchor check after the read: a pread of the first line and its CRC),
// decode-us (protocol.Decode of the line), commit-us (the cursor record:
// encoded and written). An op is one of each.
func BenchmarkDeliveryParts(b *testing.B) {
	team := b.TempDir()
	m := msg("alice", "bob", benchLine)
	if err := Append(team, "bob", m); err != nil {
		b.Fatal(err)
	}
	p, err := path(team, "bob")
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	raw, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	first := anchorOf(line{at: 0, next: int64(len(raw)), text: raw[:len(raw)-1]})
	if err := os.MkdirAll(teamdir.CursorsDirPath(team), teamdir.DirMode); err != nil {
		b.Fatal(err)
	}
	cur, err := openCursor(cursorPath(team, "bob"), 1024)
	if err != nil {
		b.Fatal(err)
	}
	defer cur.close(true)
	buf, anchorBuf := make([]byte, 64<<10), make([]byte, anchorWindow)
	fd := int(f.Fd())
	var st syscall.Stat_t
	parts := []struct {
		metric string
		run    func() error
		total  time.Duration
	}{
		{metric: "fstat-us", run: func() error { return syscall.Fstat(fd, &st) }},
		{metric: "pread-us", run: func() error { _, err := syscall.Pread(fd, buf, 0); return err }},
		{metric: "anchor-us", run: func() error {
			if ok, err := first.holds(f, anchorBuf); err != nil || !ok {
				return fmt.Errorf("anchor: %v %v", ok, err)
			}
			return nil
		}},
		{metric: "decode-us", run: func() error {
			_, err := protocol.Decode(raw[:len(raw)-1], protocol.Fallback{To: "bob", ID: "x0-bob"})
			return err
		}},
		{metric: "commit-us", run: func() error { return cur.commit(int64(len(raw)), m.ID) }},
	}
	n := 0
	for b.Loop() {
		if n%appendBlock == 0 {
			for i := range parts {
				t0 := time.Now()
				for range appendBlock {
					if err := parts[i].run(); err != nil {
						b.Fatal(err)
					}
				}
				parts[i].total += time.Since(t0)
			}
		}
		n++
	}
	blocks := float64((n + appendBlock - 1) / appendBlock * appendBlock)
	for _, p := range parts {
		b.ReportMetric(p.total.Seconds()*1e6/blocks, p.metric)
	}
}

// BenchmarkAppendBatch measures one writer appending batches of 64
// messages through an Appender (one write under one lock per batch); an
// op is one batch, msgs/s counts messages.
func BenchmarkAppendBatch(b *testing.B) {
	const batch = 64
	a, err := NewAppender(b.TempDir(), "bob")
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	msgs := make([]*protocol.Message, batch)
	for i := range msgs {
		msgs[i] = msg("alice", "bob", benchLine)
	}
	start := time.Now()
	for b.Loop() {
		if err := a.AppendBatch(msgs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "msgs/s")
}

// benchWrite is how the delivery benchmarks' writer appends one message.
type benchWrite func(m *protocol.Message) error

// openBenchWriter is the writer a long-lived sender uses: one append per
// message through a descriptor kept open.
func openBenchWriter(team, member string) (benchWrite, func() error, error) {
	a, err := NewAppender(team, member)
	if err != nil {
		return nil, nil, err
	}
	return a.Append, a.Close, nil
}

// BenchmarkDeliveryInProcess measures, in one process, the latency from the
// moment before a writer appends a message to the moment the watching
// consumer's handler runs, interleaved one for one with the floor: a plain
// write to a kept-open file until its fsnotify event arrives, no huddle
// code. Both clocks start before the write. p50-ratio and p99-ratio are
// huddle's percentile over the floor's; cpu-us/op is the CPU this process
// used (getrusage) per op, one delivery and one floor sample.
func BenchmarkDeliveryInProcess(b *testing.B) { deliveryInProcess(b) }

func deliveryInProcess(b *testing.B) {
	team := b.TempDir()
	rig := newDeliveryRig(b, team)
	defer rig.close(b)
	write, closeWriter, err := openBenchWriter(team, "bob")
	if err != nil {
		b.Fatal(err)
	}
	defer closeWriter()
	floor, err := os.OpenFile(rig.floorPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer floor.Close()
	rig.awaitFloor(b) // the create
	m := msg("alice", "bob", benchLine)
	floorLine := floorLine()
	var huddle, fl []time.Duration
	cpu0 := processCPU(b)
	for b.Loop() {
		m.ID = protocol.NewMessageID()
		t0 := time.Now().UnixNano()
		if err := write(m); err != nil {
			b.Fatal(err)
		}
		huddle = append(huddle, time.Duration(rig.awaitHandler(b)-t0))

		t0 = time.Now().UnixNano()
		if _, err := floor.Write(floorLine); err != nil {
			b.Fatal(err)
		}
		fl = append(fl, time.Duration(rig.awaitFloor(b)-t0))
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-us/op")
	reportLatency(b, huddle, fl)
}

// processCPU is the CPU time this process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDeliveryAcrossProcesses measures the same as
// BenchmarkDeliveryInProcess with the writer in another process (this test
// binary re-executed as benchWriterRole), as in a team: the CLI or another
// runtime writes, the runtime consumes. The writer takes the time just
// before each write and sends it on its stdout after; this process takes
// the time when the handler runs or the floor's event arrives.
//
// The two timestamps are wall-clock (time.Now().UnixNano(), CLOCK_REALTIME
// through the vDSO) because Go's monotonic clock readings cannot be carried
// to another process. On one machine both processes read the same clock, so
// the difference is exact to the clock's resolution; only a step of the
// clock (settimeofday, an NTP step, never a slew) during a sample would
// spoil it, and it would show as one absurd sample, not a bias.
func BenchmarkDeliveryAcrossProcesses(b *testing.B) {
	team := b.TempDir()
	rig := newDeliveryRig(b, team)
	defer rig.close(b)
	wr := startBenchWriter(b, team, rig.floorPath)
	rig.awaitFloor(b) // the create
	var huddle, fl []time.Duration
	for b.Loop() {
		wr.ask(b, 'h')
		at := rig.awaitHandler(b)
		huddle = append(huddle, time.Duration(at-wr.sentAt(b)))

		wr.ask(b, 'f')
		at = rig.awaitFloor(b)
		fl = append(fl, time.Duration(at-wr.sentAt(b)))
	}
	b.StopTimer()
	reportLatency(b, huddle, fl)
}

// deliveryRig is a watcher with a consumer of bob's inbox whose handler
// stamps the time of each delivery, and the floor: an fsnotify watch of a
// directory of its own.
type deliveryRig struct {
	cancel    context.CancelFunc
	w         *Watcher
	got       chan int64
	fw        *fsnotify.Watcher
	floorPath string
}

func newDeliveryRig(b *testing.B, team string) *deliveryRig {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := NewWatcher(ctx, team, Options{})
	if err != nil {
		b.Fatal(err)
	}
	r := &deliveryRig{cancel: cancel, w: w, got: make(chan int64, 1)}
	if err := w.Consume("bob", func(context.Context, Delivery) error {
		r.got <- time.Now().UnixNano()
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if r.fw, err = fsnotify.NewWatcher(); err != nil {
		b.Fatal(err)
	}
	if err := r.fw.Add(dir); err != nil {
		b.Fatal(err)
	}
	r.floorPath = filepath.Join(dir, "x.jsonl")
	return r
}

func (r *deliveryRig) awaitHandler(b *testing.B) int64 {
	select {
	case at := <-r.got:
		return at
	case <-time.After(10 * time.Second):
		b.Fatal("no delivery within 10s")
		return 0
	}
}

func (r *deliveryRig) awaitFloor(b *testing.B) int64 {
	select {
	case _, ok := <-r.fw.Events:
		if !ok {
			b.Fatal("fsnotify closed")
		}
		return time.Now().UnixNano()
	case err := <-r.fw.Errors:
		b.Fatal(err)
	case <-time.After(10 * time.Second):
		b.Fatal("no fsnotify event within 10s")
	}
	return 0
}

func (r *deliveryRig) close(b *testing.B) {
	r.fw.Close()
	r.cancel()
	if err := r.w.Close(); err != nil {
		b.Fatal(err)
	}
}

func floorLine() []byte {
	return []byte(`{"id":"m-1","type":"message","from":"alice","to":"bob","content":"` + benchLine + `"}` + "\n")
}

// benchWriterRole is this test binary re-executed as the writer of
// BenchmarkDeliveryAcrossProcesses: for each byte on stdin, 'h' appends a
// message to bob's inbox and 'f' writes a line to the floor file, and it
// prints the wall-clock time taken just before that write.
const benchWriterRole = "benchwriter"

func runBenchWriter() int {
	team, floorPath := os.Getenv("DIR"), os.Getenv("FLOOR")
	write, closeWriter, err := openBenchWriter(team, "bob")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer closeWriter()
	floor, err := os.OpenFile(floorPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer floor.Close()
	in, out := bufio.NewReader(os.Stdin), bufio.NewWriter(os.Stdout)
	m := msg("alice", "bob", benchLine)
	line := floorLine()
	for {
		cmd, err := in.ReadByte()
		if err == io.EOF {
			return 0
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		m.ID = protocol.NewMessageID()
		t0 := time.Now().UnixNano()
		switch cmd {
		case 'h':
			err = write(m)
		case 'f':
			_, err = floor.Write(line)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintf(out, "%d\n", t0)
		if err := out.Flush(); err != nil {
			return 1
		}
	}
}

type benchWriter struct{ *benchfloor.Child }

// startBenchWriter starts the writer process; the benchmark's cleanup
// ends it.
func startBenchWriter(b *testing.B, team, floorPath string) *benchWriter {
	b.Helper()
	return &benchWriter{benchfloor.StartChild(b, roleEnv+"="+benchWriterRole, "DIR="+team, "FLOOR="+floorPath)}
}

// ask asks the writer for one write; the time it took before the write
// is read after the write has arrived (sentAt), off the timed path.
func (w *benchWriter) ask(b *testing.B, what byte) {
	if _, err := w.In.Write([]byte{what}); err != nil {
		b.Fatal(err)
	}
}

// sentAt reads the time the writer took before its last write.
func (w *benchWriter) sentAt(b *testing.B) int64 {
	s, err := w.Out.ReadString('\n')
	if err != nil {
		b.Fatal(err)
	}
	t0, err := strconv.ParseInt(s[:len(s)-1], 10, 64)
	if err != nil {
		b.Fatal(err)
	}
	return t0
}

func reportLatency(b *testing.B, huddle, floor []time.Duration) {
	h50, h99, f50, f99 := pct(huddle, 50), pct(huddle, 99), pct(floor, 50), pct(floor, 99)
	b.ReportMetric(h50, "p50-us")
	b.ReportMetric(h99, "p99-us")
	b.ReportMetric(f50, "floor-p50-us")
	b.ReportMetric(f99, "floor-p99-us")
	if f50 > 0 && f99 > 0 {
		b.ReportMetric(h50/f50, "p50-ratio")
		b.ReportMetric(h99/f99, "p99-ratio")
	}
}

// pct is the p-th percentile of d in microseconds.
func pct(d []time.Duration, p int) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[min(len(s)-1, len(s)*p/100)]) / 1e3
}

// BenchmarkConsumerHeap measures the heap a watched consumer holds while
// idle, before any message and after it has received one, with 1,000
// consumers (one per inbox) under one watcher, as a team of 1,000
// teammates has.
func BenchmarkConsumerHeap(b *testing.B) {
	const consumers = 1000
	// One measurement per call whatever b.N is: each one is a whole team's
	// worth of consumers, and the figure is per consumer, not per op.
	before, after := consumerHeap(b, consumers)
	b.ReportMetric(before, "heap-B/consumer-before-msg")
	b.ReportMetric(after, "heap-B/consumer")
}

func consumerHeap(b *testing.B, consumers int) (before, after float64) {
	team := b.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base := heapNow()
	w, err := NewWatcher(ctx, team, Options{})
	if err != nil {
		b.Fatal(err)
	}
	var handled atomic.Int64
	names := make([]string, consumers)
	for i := range names {
		names[i] = fmt.Sprintf("m%04d", i)
		if err := w.Consume(names[i], func(context.Context, Delivery) error { handled.Add(1); return nil }); err != nil {
			b.Fatal(err)
		}
	}
	before = float64(heapNow()-base) / float64(consumers)
	for _, n := range names {
		if err := Append(team, n, msg("lead", n, benchLine)); err != nil {
			b.Fatal(err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for handled.Load() < int64(consumers) {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d delivered", handled.Load(), consumers)
		}
		time.Sleep(time.Millisecond)
	}
	after = float64(heapNow()-base) / float64(consumers)
	cancel()
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return before, after
}

// heapNow is the live heap after a full collection.
func heapNow() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
