package claudeteam

import (
	"bytes"
	"encoding/json"
	"fmt"
	"huddle/internal/testkit"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// Claude Code writers rewrite an inbox whole, in place, many times, while
// its recipient flips read flags and huddle both reads it and appends to it
// under the same lock: every message is shown exactly once, none is lost
// from the file, and nothing crashes.
func TestRewritesRacingTheReader(t *testing.T) {
	root := t.TempDir()
	writeConfig(t, root, "alpha", "alice", "bob", "carol")
	path := inbox(root, "alpha", "alice")
	// The inbox exists before the writers race: Claude Code creates it
	// outside the lock (open with wx, then write []), so two first writers
	// at once can tear it; that window is Claude Code's, not what this
	// test is about.
	if err := os.WriteFile(path, []byte("[]"), 0o600); err != nil {
		t.Fatal(err)
	}
	const perWriter, huddleAppends = 60, 8

	var maxSeen sync.Map // every snapshot: no message twice
	dup := make(chan string, 1)
	o, err := Observe(t.Context(), root, "alpha", func(s State) {
		seen := map[string]bool{}
		for _, m := range s.Snapshot.Messages {
			key := m.Msg.From + "|" + m.Msg.Content + "|" + m.Msg.RequestID
			if seen[key] {
				select {
				case dup <- key:
				default:
				}
			}
			seen[key] = true
		}
		maxSeen.Store("n", len(s.Snapshot.Messages))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()

	var wg sync.WaitGroup
	for _, w := range []string{"bob", "carol"} {
		wg.Go(func() {
			for i := range perWriter {
				claudeAppend(t, path, entry(w, fmt.Sprintf("%s says %d", w, i), time.Now()))
			}
		})
	}
	stop := make(chan struct{})
	wg.Go(func() { // the recipient polling its inbox and marking it read, far faster than Claude Code's 1 s
		poll := time.NewTicker(2 * time.Millisecond)
		defer poll.Stop()
		for {
			select {
			case <-stop:
				return
			case <-poll.C:
			}
			_ = markAllRead(path)
		}
	})
	var ids []string
	for i := range huddleAppends {
		// Ids are stamped in ms, as Claude Code's are: distinct stamps.
		id, err := leadAsksShutdown(t.Context(), root, "alpha", "alice", "racing", time.Now().Add(time.Duration(i)*time.Millisecond))
		if err != nil {
			t.Error(err)
			continue
		}
		ids = append(ids, id)
	}
	close(stop)
	wg.Wait()

	want := 2*perWriter + len(ids)
	// The file lost no update.
	elems, err := readInbox(path)
	if err != nil || len(elems) != want {
		t.Fatalf("inbox holds %d elements (%v), want %d", len(elems), err, want)
	}
	testkit.WaitFor(t, 20*time.Second, "every message shown", func() bool { return len(o.Last().Snapshot.Messages) == want })
	select {
	case k := <-dup:
		t.Fatalf("a message shown twice: %s", k)
	default:
	}
	s := o.Last()
	got := contentsOf(s)
	for _, w := range []string{"bob", "carol"} {
		for i := range perWriter {
			if !hasLine(got, fmt.Sprintf("%s says %d", w, i)) {
				t.Errorf("lost %s says %d", w, i)
			}
		}
	}
	for _, id := range ids {
		if r := request(s, id); r == nil || r.To != "alice" {
			t.Errorf("shutdown %s not shown", id)
		}
	}
	if n, _ := maxSeen.Load("n"); n.(int) > want {
		t.Errorf("a snapshot showed %d messages, more than the %d written", n, want)
	}
	// A torn read met on the way is shown, and gone at the fold after the
	// last write.
	testkit.WaitFor(t, 20*time.Second, "no inbox error once the writes settled", func() bool {
		return !strings.Contains(memberOf(o.Last(), "alice").Activity, "inbox:")
	})
}

// huddle changes no byte of any inbox but by its own appends: every element
// already there stays byte-identical, in its place, read flags included.
func TestNoByteChangedButHuddlesAppends(t *testing.T) {
	root := t.TempDir()
	writeConfig(t, root, "alpha", "alice", "bob")
	now := time.Now().Add(-time.Hour)
	// Written by hand in odd but valid shapes: huddle must keep them.
	files := map[string]string{
		"alice":  "[\n  {\n    \"from\": \"team-lead\",\n    \"text\": \"caf\\u00e9 <b>&amp;</b> \\\"quoted\\\"\",\n    \"timestamp\": \"" + Stamp(now) + "\",\n    \"read\": true,\n    \"color\": \"blue\",\n    \"extra\": {\"z\": 1, \"a\": [1, 2]}\n  },\n  {\"from\":\"bob\",\"text\":\"compact\",\"timestamp\":\"" + Stamp(now) + "\",\"read\":false}\n]\n",
		"bob":    "[]",
		LeadName: "[\n  {\n    \"from\": \"alice\",\n    \"text\": \"{\\\"type\\\":\\\"permission_request\\\",\\\"request_id\\\":\\\"perm-9\\\",\\\"agent_id\\\":\\\"alice\\\",\\\"tool_name\\\":\\\"Edit\\\",\\\"description\\\":\\\"edit a file\\\",\\\"input\\\":{}}\",\n    \"timestamp\": \"" + Stamp(now) + "\",\n    \"read\": false\n  }\n]",
	}
	before := map[string][]byte{}
	for name, body := range files {
		p := inbox(root, "alpha", name)
		if err := os.WriteFile(p, []byte(body), 0o640); err != nil {
			t.Fatal(err)
		}
		before[name] = []byte(body)
	}
	o := observe(t, root, "alpha")
	for i := range 2 {
		id, err := leadAsksShutdown(t.Context(), root, "alpha", "alice", "done", time.Now().Add(time.Duration(i)*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(id, "@alice") {
			t.Errorf("id %s", id)
		}
	}
	if _, err := leadAsksShutdown(t.Context(), root, "alpha", "bob", "done", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := AnswerPermission(t.Context(), root, "alpha", "perm-9", true, "huddle:tester", ""); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "huddle's appends seen", func() bool { return len(o.Last().Snapshot.Requests) == 4 })
	if _, err := Read(root, "alpha"); err != nil {
		t.Fatal(err)
	}

	if after, _ := os.ReadFile(inbox(root, "alpha", LeadName)); !bytes.Equal(after, before[LeadName]) {
		t.Errorf("team-lead's inbox changed:\n%s", after)
	}
	appended := map[string]int{"alice": 3, "bob": 1} // alice: two shutdowns, one permission answer
	for name, n := range appended {
		after, err := os.ReadFile(inbox(root, "alpha", name))
		if err != nil {
			t.Fatal(err)
		}
		var old, cur []json.RawMessage
		_ = json.Unmarshal(before[name], &old)
		if err := json.Unmarshal(after, &cur); err != nil {
			t.Fatalf("%s's inbox is no longer a JSON array: %v", name, err)
		}
		if len(cur) != len(old)+n {
			t.Fatalf("%s's inbox: %d elements, want %d", name, len(cur), len(old)+n)
		}
		for i := range old {
			if !bytes.Equal(old[i], cur[i]) {
				t.Errorf("%s's element %d changed:\n%s\nnow\n%s", name, i, old[i], cur[i])
			}
		}
		// Even the bytes between the elements stay: the old file up to its
		// last element is a prefix of the new one.
		body := bytes.TrimRight(before[name], " \n")
		body = bytes.TrimRight(body[:len(body)-1], " \n")
		if !bytes.HasPrefix(after, body) {
			t.Errorf("%s's inbox does not start with its old bytes", name)
		}
		for _, raw := range cur[len(old):] {
			var e Entry
			if err := json.Unmarshal(raw, &e); err != nil || e.From != LeadName || e.Read {
				t.Errorf("%s: appended %s", name, raw)
			}
		}
		if fi, _ := os.Stat(inbox(root, "alpha", name)); fi.Mode().Perm() != 0o640 {
			t.Errorf("%s's inbox mode %v, want 0640 kept", name, fi.Mode().Perm())
		}
	}
	if ents, _ := os.ReadDir(inboxesDir(root, "alpha")); len(ents) != 3 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("inboxes directory holds %v: a lock or temp file left behind", names)
	}
}
