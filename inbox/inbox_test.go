package inbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/protocol"
	"huddle/teamdir"
)

func TestAppendRefusesBadNamesAndTouchesNothing(t *testing.T) {
	for _, name := range []string{"../x", "a/b", "", strings.Repeat("a", 64), "LEAD", "/etc/passwd", ".hidden", "x\x00y"} {
		t.Run(fmt.Sprintf("%q", name), func(t *testing.T) {
			root := t.TempDir()
			team := filepath.Join(root, "team")
			m := msg("alice", "", "hi")
			if err := Append(team, name, m); err == nil {
				t.Fatalf("Append to %q: want an error", name)
			}
			if _, err := NewConsumer(team, name, nil, Options{}); err == nil {
				t.Fatalf("NewConsumer for %q: want an error", name)
			}
			var found []string
			filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				if p != root {
					found = append(found, p)
				}
				return nil
			})
			if len(found) > 0 {
				t.Fatalf("files created for a refused name: %v", found)
			}
		})
	}
}

func TestAppendRefusesOversizeAndMismatchedRecipient(t *testing.T) {
	team := t.TempDir()
	if err := Append(team, "bob", msg("alice", "bob", strings.Repeat("x", protocol.MaxLine))); err == nil || !strings.Contains(err.Error(), "1 MiB") {
		t.Fatalf("oversize: got %v", err)
	}
	if err := Append(team, "bob", msg("alice", "carol", "hi")); err == nil {
		t.Fatal("message to carol accepted into bob's inbox")
	}
	bad := msg("alice", "bob", "")
	if err := Append(team, "bob", bad); err == nil || !strings.Contains(err.Error(), "content is required") {
		t.Fatalf("invalid message: got %v", err)
	}
	if _, err := os.Stat(filepath.Join(team, "inbox", "bob.jsonl")); err == nil {
		if b, _ := os.ReadFile(filepath.Join(team, "inbox", "bob.jsonl")); len(b) > 0 {
			t.Fatalf("refused messages were written: %q", b)
		}
	}
}

func TestAppendWritesFullFormWithPermissions(t *testing.T) {
	team := t.TempDir()
	if err := Append(team, "bob", msg("alice", "", "hello")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(team, "inbox", "bob.jsonl")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("inbox file mode %v, want 0600", st.Mode().Perm())
	}
	if st, _ := os.Stat(filepath.Join(team, "inbox")); st.Mode().Perm() != 0o700 {
		t.Errorf("inbox dir mode %v, want 0700", st.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	var raw map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(b), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "type", "from", "to", "ts", "content"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("written line lacks %q: %s", k, b)
		}
	}
	if raw["to"] != "bob" {
		t.Errorf("to = %v, want bob", raw["to"])
	}
}

// collect is a handler that records deliveries.
type collect struct {
	mu sync.Mutex
	ds []Delivery
}

func (c *collect) handle(_ context.Context, d Delivery) error {
	c.mu.Lock()
	c.ds = append(c.ds, d)
	c.mu.Unlock()
	return nil
}

func (c *collect) len() int { c.mu.Lock(); defer c.mu.Unlock(); return len(c.ds) }

func (c *collect) contents() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, d := range c.ds {
		out = append(out, d.Msg.Content)
	}
	return out
}

func appendRaw(t *testing.T, team, member, s string) {
	t.Helper()
	if err := os.MkdirAll(teamdir.InboxDirPath(team), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(teamdir.InboxDirPath(team), member+".jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func deadLetters(t *testing.T, team string) []protocol.DeadLetterLine {
	t.Helper()
	b, err := os.ReadFile(teamdir.DeadLetterPath(team))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []protocol.DeadLetterLine
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var d protocol.DeadLetterLine
		if err := json.Unmarshal(l, &d); err != nil {
			t.Fatalf("dead letter line %q: %v", l, err)
		}
		out = append(out, d)
	}
	return out
}

func TestTornLineWaitsForItsNewline(t *testing.T) {
	team := t.TempDir()
	if err := Append(team, "bob", msg("alice", "", "first")); err != nil {
		t.Fatal(err)
	}
	second, _ := protocol.Encode(msg("alice", "bob", "second"))
	appendRaw(t, team, "bob", string(second[:20]))
	var got collect
	c, err := NewConsumer(team, "bob", got.handle, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := c.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.contents()) != "[first]" {
		t.Fatalf("after torn write got %v, want [first]", got.contents())
	}
	if dl := deadLetters(t, team); len(dl) != 0 {
		t.Fatalf("a write in progress was dead-lettered: %+v", dl)
	}
	appendRaw(t, team, "bob", string(second[20:])+"\n")
	if err := c.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.contents()) != "[first second]" {
		t.Fatalf("after completing the line got %v", got.contents())
	}
}

func TestBadLinesAreDeadLetteredAndTheConsumerGoesOn(t *testing.T) {
	team := t.TempDir()
	appendRaw(t, team, "bob", "this is not json\n")
	off1 := int64(len("this is not json\n"))
	missing := `{"id":"m-1","type":"plan_approval_response","from":"lead","to":"bob","ts":"2026-11-30T09:12:58.123456Z","approve":true}` + "\n"
	appendRaw(t, team, "bob", missing)
	off2 := off1 + int64(len(missing))
	big := `{"type":"message","from":"alice","content":"` + strings.Repeat("y", protocol.MaxLine+10) + "\"}\n"
	appendRaw(t, team, "bob", big)
	off3 := off2 + int64(len(big))
	if err := Append(team, "bob", msg("alice", "", "after the bad ones")); err != nil {
		t.Fatal(err)
	}
	var got collect
	c, err := NewConsumer(team, "bob", got.handle, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.contents()) != "[after the bad ones]" {
		t.Fatalf("got %v", got.contents())
	}
	if got.ds[0].Offset != off3 {
		t.Errorf("offset of the good line = %d, want %d", got.ds[0].Offset, off3)
	}
	dl := deadLetters(t, team)
	if len(dl) != 3 {
		t.Fatalf("want 3 dead letters, got %+v", dl)
	}
	want := []struct {
		off    int64
		reason string
	}{{0, "JSON"}, {off1, "plan_approval_response: request_id is required"}, {off2, "exceeds 1 MiB"}}
	for i, w := range want {
		if dl[i].Offset != w.off || !strings.Contains(dl[i].Reason, w.reason) || dl[i].Source != "inbox/bob.jsonl" {
			t.Errorf("dead letter %d = {%d %q %q}, want offset %d reason containing %q", i, dl[i].Offset, dl[i].Source, dl[i].Reason, w.off, w.reason)
		}
		if len(dl[i].Raw) > 4<<10 {
			t.Errorf("dead letter %d keeps %d raw bytes, want at most 4 KiB", i, len(dl[i].Raw))
		}
	}
	// Nothing is dead-lettered or delivered twice on the next drain.
	if err := c.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got.len() != 1 || len(deadLetters(t, team)) != 3 {
		t.Fatalf("second drain repeated work: %d deliveries, %d dead letters", got.len(), len(deadLetters(t, team)))
	}
}

func TestLearnClaudeCodeLineIsDelivered(t *testing.T) {
	team := t.TempDir()
	appendRaw(t, team, "alice", `{"type":"shutdown_request","from":"lead","content":"please stop","timestamp":1764494000.5,"request_id":"ab12cd34"}`+"\n")
	appendRaw(t, team, "alice", `{"type":"plan_approval_response","from":"bob","plan":"rewrite auth","request_id":"ff00ff00","timestamp":1764494001.0}`+"\n")
	var got collect
	c, err := NewConsumer(team, "alice", got.handle, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got.len() != 2 {
		t.Fatalf("got %d deliveries, want 2 (dead letters: %+v)", got.len(), deadLetters(t, team))
	}
	d := got.ds[0].Msg
	if d.Type != protocol.TypeShutdownRequest || d.To != "alice" || d.RequestID != "ab12cd34" || d.ID == "" {
		t.Errorf("first: %+v", d)
	}
	if want := time.Unix(1764494000, 500_000_000).UTC(); !d.TS.Equal(want) {
		t.Errorf("ts = %v, want %v", d.TS, want)
	}
	if p := got.ds[1].Msg; p.Type != protocol.TypePlanApprovalRequest || p.Plan != "rewrite auth" {
		t.Errorf("a plan sent in the learn-claude-code dialect was read as %+v", p)
	}
	if got.ds[0].Msg.ID == got.ds[1].Msg.ID {
		t.Errorf("derived ids collide: %q", got.ds[0].Msg.ID)
	}
}

func TestDuplicateIDsAreHandledOnceAcrossRestarts(t *testing.T) {
	team := t.TempDir()
	m := msg("alice", "bob", "once")
	if err := Append(team, "bob", m); err != nil {
		t.Fatal(err)
	}
	if err := Append(team, "bob", m); err != nil { // a retried append
		t.Fatal(err)
	}
	var got collect
	c, err := NewConsumer(team, "bob", got.handle, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := Append(team, "bob", m); err != nil { // and once more, after a restart
		t.Fatal(err)
	}
	if err := Append(team, "bob", msg("alice", "bob", "new")); err != nil {
		t.Fatal(err)
	}
	c, err = NewConsumer(team, "bob", got.handle, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.contents()) != "[once new]" {
		t.Fatalf("got %v, want [once new]", got.contents())
	}
	for _, d := range got.ds {
		if d.Redelivery {
			t.Errorf("%q marked as a redelivery after a clean stop", d.Msg.Content)
		}
	}
}

func TestHandlerErrorIsRetriedThenDeadLettered(t *testing.T) {
	team := t.TempDir()
	for _, s := range []string{"poison", "fine"} {
		if err := Append(team, "bob", msg("alice", "bob", s)); err != nil {
			t.Fatal(err)
		}
	}
	attempts := 0
	var got collect
	c, err := NewConsumer(team, "bob", func(ctx context.Context, d Delivery) error {
		if d.Msg.Content == "poison" {
			attempts++
			return fmt.Errorf("cannot handle %s", d.Msg.Content)
		}
		return got.handle(ctx, d)
	}, Options{Retries: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if attempts != 3 || fmt.Sprint(got.contents()) != "[fine]" {
		t.Fatalf("attempts %d, delivered %v", attempts, got.contents())
	}
	dl := deadLetters(t, team)
	if len(dl) != 1 || !strings.Contains(dl[0].Reason, "handler: cannot handle poison") {
		t.Fatalf("dead letters %+v", dl)
	}
}

func TestForeignTruncationStartsOverWithoutReusingOffsets(t *testing.T) {
	team := t.TempDir()
	for i := range 3 {
		if err := Append(team, "bob", msg("alice", "bob", fmt.Sprint("old", i))); err != nil {
			t.Fatal(err)
		}
	}
	var got collect
	c, err := NewConsumer(team, "bob", got.handle, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	lastOld := got.ds[2].Offset
	// A foreign consumer drains the file by truncating it; a line without an
	// id arrives after.
	if err := os.Truncate(filepath.Join(teamdir.InboxDirPath(team), "bob.jsonl"), 0); err != nil {
		t.Fatal(err)
	}
	appendRaw(t, team, "bob", `{"type":"message","from":"alice","content":"new","timestamp":1764494000}`+"\n")
	if err := c.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.contents()) != "[old0 old1 old2 new]" {
		t.Fatalf("got %v", got.contents())
	}
	if got.ds[3].Offset <= lastOld {
		t.Errorf("offset after truncation %d does not grow past %d", got.ds[3].Offset, lastOld)
	}
}

// TestConcurrentWriterProcesses: 8 writer processes × 5,000 messages into one
// inbox while a watching consumer reads.
func TestConcurrentWriterProcesses(t *testing.T) {
	const writers, per = 8, 5000
	team := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := NewWatcher(ctx, team, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	next := map[string]int{}
	seen := map[string]bool{}
	var errs []string
	total := 0
	err = w.Consume(protocol.Lead, func(_ context.Context, d Delivery) error {
		mu.Lock()
		defer mu.Unlock()
		if seen[d.Msg.ID] {
			errs = append(errs, "twice: "+d.Msg.ID)
		}
		seen[d.Msg.ID] = true
		var i int
		fmt.Sscanf(d.Msg.Content[strings.IndexByte(d.Msg.Content, ':')+1:], "%d", &i)
		if i != next[d.Msg.From] {
			errs = append(errs, fmt.Sprintf("%s: got %d, want %d", d.Msg.From, i, next[d.Msg.From]))
		}
		next[d.Msg.From] = i + 1
		total++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var procs []*exec.Cmd
	for i := range writers {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), roleEnv+"=writer", "DIR="+team, fmt.Sprintf("WRITER=w%d", i), fmt.Sprintf("N=%d", per))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
	}
	for _, p := range procs {
		if err := p.Wait(); err != nil {
			t.Fatalf("writer: %v", err)
		}
	}
	testkit.WaitFor(t, 2*time.Minute, "every message", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return total >= writers*per || len(errs) > 0
	})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) > 0 {
		t.Fatalf("%d problems, first: %v", len(errs), errs[:min(5, len(errs))])
	}
	for i := range writers {
		if n := next[fmt.Sprintf("w%d", i)]; n != per {
			t.Errorf("writer w%d: %d delivered, want %d", i, n, per)
		}
	}
	if total != writers*per {
		t.Fatalf("total %d, want %d", total, writers*per)
	}
	if dl := deadLetters(t, team); len(dl) > 0 {
		t.Fatalf("dead letters: %+v", dl[:min(3, len(dl))])
	}
}

// TestConsumerSurvivesKill9: a consumer process is killed with SIGKILL at
// random moments and restarted 20 times while writers run.
func TestConsumerSurvivesKill9(t *testing.T) {
	const writers, per, kills = 4, 2500, 20
	team := t.TempDir()
	logPath := filepath.Join(t.TempDir(), "handled.log")
	start := func() *exec.Cmd { return child(t, "consumer", "DIR="+team, "LOG="+logPath) }
	var procs []*exec.Cmd
	for i := range writers {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), roleEnv+"=writer", "DIR="+team, fmt.Sprintf("WRITER=w%d", i), fmt.Sprintf("N=%d", per))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
	}
	handled := func() int {
		b, _ := os.ReadFile(logPath)
		return bytes.Count(b, []byte("\n"))
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	for k := range kills {
		before := handled()
		c := start()
		// Kill after a random amount of progress, so the kill lands anywhere
		// in the consume loop. At least two handled lines: the first after a
		// restart is the redelivery, and a kill before its commit would
		// deliver it a third time — allowed (one redelivery per crash) but
		// not what the count below checks; two lines mean it was committed.
		target := min(before+2+rng.IntN(400), writers*per)
		testkit.WaitFor(t, time.Minute, "consumer progress", func() bool { return handled() >= target })
		if err := c.Process.Kill(); err != nil {
			t.Fatalf("kill %d: %v", k, err)
		}
		c.Wait()
	}
	for _, p := range procs {
		if err := p.Wait(); err != nil {
			t.Fatalf("writer: %v", err)
		}
	}
	final := start()
	testkit.WaitFor(t, 2*time.Minute, "every message handled", func() bool {
		uniq := map[string]bool{}
		for _, e := range readLog(t, logPath) {
			uniq[e.id] = true
		}
		return len(uniq) >= writers*per
	})
	stopConsumer(t, final)
	entries := readLog(t, logPath)
	count := map[string]int{}
	sent := map[string]bool{}
	for i := range writers {
		for j := range per {
			sent[fmt.Sprintf("w%d:%d", i, j)] = true
		}
	}
	dups := 0
	handledContent := map[string]bool{}
	for _, e := range entries {
		count[e.id]++
		if !sent[e.content] {
			t.Fatalf("handled a message never sent: %q", e.content)
		}
		handledContent[e.content] = true
		if count[e.id] == 2 {
			dups++
			if !e.redelivery {
				t.Errorf("message %s handled twice without the redelivery mark", e.id)
			}
		}
		if count[e.id] > 2 {
			t.Errorf("message %s handled %d times", e.id, count[e.id])
		}
	}
	if len(handledContent) != len(sent) {
		t.Fatalf("%d messages lost", len(sent)-len(handledContent))
	}
	if dups > kills {
		t.Fatalf("%d redeliveries for %d kills: at most one per crash", dups, kills)
	}
	t.Logf("%d messages, %d kills, %d redeliveries", len(entries), kills, dups)
}

// TestAbandonLeavesTheMessageInFlightMarked: a consumer stopped by
// Abandon mid-message records no clean stop, so the next one hands the
// message out again marked Redelivery, and the rest unmarked; Close in the
// same place would not mark it.
func TestAbandonLeavesTheMessageInFlightMarked(t *testing.T) {
	for _, stop := range []string{"abandon", "close"} {
		t.Run(stop, func(t *testing.T) {
			team := t.TempDir()
			for _, s := range []string{"done", "in flight", "later"} {
				if err := Append(team, "bob", msg("alice", "bob", s)); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			c, err := NewConsumer(team, "bob", func(ctx context.Context, d Delivery) error {
				if d.Msg.Content == "in flight" {
					cancel() // the stop arrives while this message is handled
					return ctx.Err()
				}
				return nil
			}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Drain(ctx); err != nil { // a stop is no error
				t.Fatal(err)
			}
			if ctx.Err() == nil {
				t.Fatal("the handler never saw the message in flight")
			}
			if stop == "abandon" {
				err = c.Abandon()
			} else {
				err = c.Close()
			}
			if err != nil {
				t.Fatal(err)
			}

			var got collect
			c, err = NewConsumer(team, "bob", got.handle, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := c.Drain(context.Background()); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got.contents()) != "[in flight later]" {
				t.Fatalf("got %v, want [in flight later]", got.contents())
			}
			if marked := got.ds[0].Redelivery; marked != (stop == "abandon") {
				t.Errorf("after %s the message in flight is marked %v", stop, marked)
			}
			if got.ds[1].Redelivery {
				t.Error("a message never handed out is marked a redelivery")
			}
		})
	}
}
