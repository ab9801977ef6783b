package realcli

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit"
)

// TestStopKillsTheGroupAndWhatLeftIt: a CLI whose child went to a
// session of its own (as Codex's shells do) leaves nothing running once
// stopped.
func TestStopKillsTheGroupAndWhatLeftIt(t *testing.T) {
	e, err := newEnv(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start("sh", "/bin/sh", []string{"-c", `setsid /bin/sh -c 'echo escaped $$; exec sleep 300' & exec sleep 300`}, e)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	line, err := p.Next(ctx, "escaped PID", func(l []byte) bool { return strings.HasPrefix(string(l), "escaped ") })
	if err != nil {
		t.Fatal(err)
	}
	escaped, err := strconv.Atoi(strings.TrimPrefix(string(line), "escaped "))
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "both sleeps", func() bool { return len(p.survivors()) == 2 })
	if sid, pgid := field(t, escaped, 6), field(t, escaped, 5); sid != escaped || pgid == p.cmd.Process.Pid {
		t.Fatalf("the escaped sleep %d is in session %d, group %d: the test does not test an escape", escaped, sid, pgid)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if startTime(escaped) != "" {
		t.Errorf("the escaped sleep %d is still running", escaped)
	}
	if got := p.survivors(); len(got) != 0 {
		t.Errorf("after Stop the marker is on %v", got)
	}
	if err := p.Stop(); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
}

// field is field n of /proc/pid/stat (proc(5) numbers them from 1, the
// pid) as a number: 5 is the process group, 6 the session.
func field(t *testing.T, pid, n int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	v, err := strconv.Atoi(fields[n-3]) // fields starts at field 3, the state
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestNextAndAwait(t *testing.T) {
	e, err := newEnv(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start("sh", "/bin/sh", []string{"-c", `read x; echo "a $x"; echo b; echo a2`}, e)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Send(map[string]string{"k": "x&y"}); err != nil {
		t.Fatal(err)
	}
	isA := func(l []byte) bool { return strings.HasPrefix(string(l), "a") }
	if l, i, err := p.Await(ctx, "b", 0, func(l []byte) bool { return string(l) == "b" }); err != nil || i != 1 || string(l) != "b" {
		t.Fatalf("Await b = %q %d %v", l, i, err)
	}
	if l, err := p.Next(ctx, "an a", isA); err != nil || string(l) != `a {"k":"x&y"}` {
		t.Fatalf("first Next = %q %v", l, err)
	}
	if l, err := p.Next(ctx, "an a", isA); err != nil || string(l) != "a2" {
		t.Fatalf("second Next = %q %v (Await moved its place?)", l, err)
	}
	if _, err := p.Next(ctx, "a third a", isA); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("Next after the end = %v, want an error saying it exited", err)
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if got := string(p.Sent()[0]); got != `{"k":"x&y"}` {
		t.Errorf("Sent %s", got)
	}
}
