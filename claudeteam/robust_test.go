package claudeteam

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/protocol"
)

// An inbox caught half written, a team removed and made again, a lock held
// too long: shown, read again on the next change, never a crash.
func TestTornInboxRemovedTeamAndHeldLock(t *testing.T) {
	root := t.TempDir()
	writeConfig(t, root, "alpha", "alice")
	o := observe(t, root, "alpha")
	path := inbox(root, "alpha", "alice")

	// Half written, as an in-place rewrite can be met.
	if err := os.WriteFile(path, []byte(`[{"from":"team-lead","text":"hel`), 0o600); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "the torn inbox shown", func() bool {
		return strings.Contains(memberOf(o.Last(), "alice").Activity, "inbox is not a JSON array")
	})
	if err := os.WriteFile(path, []byte(`[{"from":"team-lead","text":"hello","timestamp":"`+Stamp(time.Now())+`","read":false}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "the inbox read again", func() bool {
		s := o.Last()
		return hasLine(contentsOf(s), "hello") && !strings.Contains(memberOf(s, "alice").Activity, "inbox")
	})

	// The team removed under the observer, then made again.
	if err := os.RemoveAll(teamDir(root, "alpha")); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "the missing team shown", func() bool { return strings.Contains(o.Last().Snapshot.TeamErr, "config.json") })
	if got := contentsOf(o.Last()); !hasLine(got, "hello") {
		t.Errorf("messages already seen were dropped: %v", got)
	}
	writeConfig(t, root, "alpha", "alice", "bob")
	claudeAppend(t, inbox(root, "alpha", "bob"), entry(LeadName, "welcome back", time.Now()))
	claudeAppend(t, path, entry(LeadName, "you too", time.Now()))
	testkit.WaitFor(t, 20*time.Second, "the team back, watched again", func() bool {
		s := o.Last()
		return s.Snapshot.TeamErr == "" && hasLine(contentsOf(s), "welcome back") && memberOf(s, "bob").Name == "bob"
	})

	// A lock held by a live writer: huddle waits, then says so and writes
	// nothing.
	lp := lockPath(path)
	if err := os.Mkdir(lp, 0o700); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	_, err := leadAsksShutdown(t.Context(), root, "alpha", "alice", "x", time.Now())
	var held *LockHeldError
	if !errors.As(err, &held) {
		t.Fatalf("with the lock held: %v, want LockHeldError", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("the inbox changed while its lock was held")
	}
	// Left past Claude Code's stale threshold: shown, and taken over as
	// proper-lockfile takes over a stale lock.
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(lp, old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, time.Now(), time.Now()); err != nil { // an event, so the observer looks
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "the stale lock shown", func() bool {
		return strings.Contains(memberOf(o.Last(), "alice").Activity, "inbox lock held")
	})
	id, err := leadAsksShutdown(t.Context(), root, "alpha", "alice", "x", time.Now())
	if err != nil {
		t.Fatalf("over a stale lock: %v", err)
	}
	testkit.WaitFor(t, 20*time.Second, "the shutdown shown", func() bool {
		r := request(o.Last(), id)
		return r != nil && r.Status == protocol.RequestPending
	})
	if _, err := os.Stat(lp); !os.IsNotExist(err) {
		t.Errorf("the lock is left behind: %v", err)
	}
}

func TestShutdownRefusals(t *testing.T) {
	root := t.TempDir()
	writeConfig(t, root, "alpha", "alice")
	for _, c := range []struct{ member, want string }{
		{"mallory", "no member"},
		{LeadName, "team lead"},
		{"a/b", "slash"}, {"../alice", "dot"},
	} {
		if _, err := leadAsksShutdown(t.Context(), root, "alpha", c.member, "", time.Now()); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.member, err, c.want)
		}
	}
	if _, err := leadAsksShutdown(t.Context(), root, "nope", "alice", "", time.Now()); err == nil {
		t.Error("a shutdown in a team that does not exist")
	}
	if ents, _ := os.ReadDir(inboxesDir(root, "alpha")); len(ents) != 0 {
		t.Errorf("a refusal wrote %d files", len(ents))
	}
}

// Changes elsewhere under ROOT (Claude Code writes much there) or in
// another team fold nothing; a change of this team does.
func TestObserverFoldsOnlyForItsTeam(t *testing.T) {
	root := t.TempDir()
	writeConfig(t, root, "alpha", "alice")
	writeConfig(t, root, "beta", "bob")
	folds := make(chan State, 100)
	o, err := Observe(t.Context(), root, "alpha", func(s State) {
		select {
		case folds <- s:
		default: // the test has what it needs; never block the observer
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	<-folds // the first fold
	if err := os.WriteFile(root+"/history.jsonl", []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	claudeAppend(t, inbox(root, "beta", "bob"), entry(LeadName, "not alpha's", time.Now()))
	claudeAppend(t, inbox(root, "alpha", "alice"), entry(LeadName, "alpha's", time.Now()))
	for s := range folds {
		if got := contentsOf(s); hasLine(got, "not alpha's") {
			t.Fatalf("another team's message folded in: %v", got)
		}
		if hasLine(contentsOf(s), "alpha's") {
			break
		}
	}
	if o.relevant(root+"/history.jsonl") || o.relevant(root+"/teams/beta/inboxes/bob.json") || o.relevant(root+"/teams/alphabet/config.json") {
		t.Error("a change outside the team is relevant")
	}
	if !o.relevant(root+"/teams") || !o.relevant(root+"/tasks/alpha/1.json") || !o.relevant(root+"/teams/alpha/inboxes/alice.json") {
		t.Error("a change of the team is not relevant")
	}
}

// An inbox file just created and still empty (Claude Code creates it, then
// writes its [], outside the lock) takes huddle's append as [].
func TestAppendToAJustCreatedInbox(t *testing.T) {
	root := t.TempDir()
	writeConfig(t, root, "alpha", "alice")
	if err := os.WriteFile(inbox(root, "alpha", "alice"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	id, err := leadAsksShutdown(t.Context(), root, "alpha", "alice", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s, _ := Read(root, "alpha")
	if r := request(s, id); r == nil || r.Status != protocol.RequestPending {
		t.Errorf("the shutdown in a just-created inbox: %+v", s.Snapshot.Requests)
	}
}
