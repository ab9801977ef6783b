package team

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"huddle/inbox"
	"huddle/internal/testkit"
	"huddle/internal/testkit/files"
	"huddle/protocol"
	"huddle/teamdir"
)

// leadTeam writes a team of three external members (nothing runs them) and
// returns its directory.
func leadTeam(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), ".huddle")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := `{"name":"crew","settings":{"shutdown_deadline":"45s"},"members":[
	  {"name":"ana","runtime":{"kind":"external"}},
	  {"name":"bo","runtime":{"kind":"external"}},
	  {"name":"cy","runtime":{"kind":"external"}}]}`
	if err := os.WriteFile(ConfigPath(dir), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// inboxOf reads everything in member's inbox with a real consumer.
func inboxOf(t *testing.T, dir, member string) []protocol.Message {
	t.Helper()
	var got []protocol.Message
	c, err := inbox.NewConsumer(dir, member, func(_ context.Context, d inbox.Delivery) error {
		got = append(got, d.Msg)
		return nil
	}, inbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestDecideRefusals(t *testing.T) {
	dir := leadTeam(t)
	plan := planRequest("pl-aaaa0000aaaa", "ana", time.Now())
	mustCreate(t, dir, plan)
	sd := shutdownRequest("sd-bbbb0000bbbb", "bo", time.Now())
	mustCreate(t, dir, sd)
	planBytes := readFile(t, recordPath(t, dir, plan.ID))
	sdBytes := readFile(t, recordPath(t, dir, sd.ID))

	for _, tc := range []struct {
		name     string
		id       string
		ev       protocol.RequestEvent
		feedback string
		want     string
	}{
		{"reject without feedback", plan.ID, protocol.EventReject, "", "feedback"},
		{"approve a shutdown request", sd.ID, protocol.EventApprove, "", "shutdown request"},
		{"reject a shutdown request", sd.ID, protocol.EventReject, "no", "shutdown request"},
		{"unknown request", "pl-000000000404", protocol.EventApprove, "", "no request pl-000000000404"},
		{"invalid id", "../x", protocol.EventApprove, "", "invalid id"},
		// The lead decides a plan; only huddle cancels or expires one.
		{"cancel is not a decision", plan.ID, protocol.EventCancel, "", `"cancel" is not a decision: want approve or reject`},
		{"deadline is not a decision", plan.ID, protocol.EventDeadline, "", `"deadline" is not a decision: want approve or reject`},
		{"an unknown event", plan.ID, protocol.RequestEvent("maybe"), "hm", `"maybe" is not a decision`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := dirDecide(dir, tc.id, tc.ev, tc.feedback, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Decide: %v, want an error about %q", err, tc.want)
			}
		})
	}
	if got := readFile(t, recordPath(t, dir, plan.ID)); string(got) != string(planBytes) {
		t.Errorf("a refused decision changed the plan record:\n%s", got)
	}
	if got := readFile(t, recordPath(t, dir, sd.ID)); string(got) != string(sdBytes) {
		t.Errorf("a refused decision changed the shutdown record:\n%s", got)
	}
	for _, id := range []string{plan.ID, sd.ID} {
		if _, err := os.Stat(decisionPath(dir, id)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a refused decision left %s.decision", id)
		}
	}
	if inboxExists(t, dir, "ana") || inboxExists(t, dir, "bo") {
		t.Error("a refused decision wrote to an inbox")
	}
}

func TestRequestShutdownOfAStoppedMemberIsCancelledAtOnce(t *testing.T) {
	for _, st := range []protocol.MemberStatus{protocol.MemberStopped, protocol.MemberCrashed} {
		t.Run(string(st), func(t *testing.T) {
			dir := leadTeam(t)
			if err := files.Open(t, dir).PutMember(t.Context(), &protocol.Member{Name: "cy", Status: st, Since: time.Now()}); err != nil {
				t.Fatal(err)
			}
			r, err := dirRequestShutdown(dir, "cy", "tidy up")
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != protocol.RequestCancelled || r.ResolvedBy != protocol.Lead ||
				!strings.Contains(r.ResponseReason, "cy is already "+string(st)) {
				t.Fatalf("request = %+v, want cancelled because cy is %s", r, st)
			}
			onDisk, err := files.Open(t, dir).Request(t.Context(), r.ID)
			if err != nil || onDisk.Status != protocol.RequestCancelled {
				t.Fatalf("record on disk = %+v, %v", onDisk, err)
			}
			if inboxExists(t, dir, "cy") {
				t.Fatalf("a cancelled shutdown was still sent: %+v", inboxOf(t, dir, "cy"))
			}
		})
	}
}

func TestRequestShutdownRefusesBadMembers(t *testing.T) {
	dir := leadTeam(t)
	root := filepath.Dir(dir)
	before := testkit.Tree(t, root)
	for _, tc := range []struct{ member, want string }{
		{"zed", `no member "zed"`},
		{protocol.Lead, "reserved"},
		{"../x", "invalid name"},
		{"LEAD", "invalid name"},
		{"", "empty"},
	} {
		if _, err := dirRequestShutdown(dir, tc.member, "x"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("RequestShutdown(%q): %v, want an error about %q", tc.member, err, tc.want)
		}
	}
	if after := testkit.Tree(t, root); !reflect.DeepEqual(before, after) {
		t.Fatalf("refused shutdowns touched files:\nbefore %v\nafter  %v", before, after)
	}
}

func inboxExists(t *testing.T, dir, member string) bool {
	t.Helper()
	p, err := teamdir.InboxPath(dir, member)
	if err != nil {
		t.Fatal(err)
	}
	_, err = os.Stat(p)
	return err == nil
}

// TestSendFromOutside: a caller outside the team writes to a member as
// itself; a name that is a member's or the lead's, a bad name and an
// address not in the team are refused and write nothing.
func TestSendFromOutside(t *testing.T) {
	dir := leadTeam(t)
	st := files.Open(t, dir)
	tm, err := LoadFrom(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(dir)
	before := testkit.Tree(t, root)
	for _, tc := range []struct{ from, to, want string }{
		{"bo", "ana", "an address of team crew"},
		{protocol.Lead, "ana", "an address of team crew"},
		{"Claude!", "ana", "invalid name"},
		{"claude", "zed", `no member "zed"`},
	} {
		if err := SendFromOutside(context.Background(), st, tm, tc.from, tc.to, "hi"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SendFromOutside(%q → %q): %v, want an error about %q", tc.from, tc.to, err, tc.want)
		}
	}
	if after := testkit.Tree(t, root); !reflect.DeepEqual(before, after) {
		t.Fatalf("refused sends touched files:\nbefore %v\nafter  %v", before, after)
	}
	if err := SendFromOutside(context.Background(), st, tm, "claude", "ana", "hello"); err != nil {
		t.Fatal(err)
	}
	got := inboxOf(t, dir, "ana")
	if len(got) != 1 || got[0].From != "claude" || got[0].Content != "hello" || got[0].Type != protocol.TypeMessage {
		t.Errorf("ana's inbox: %+v", got)
	}
}
