package team

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"huddle/inbox"
	"huddle/internal/testkit"
	"huddle/protocol"
	"huddle/store"
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

// crew is leadTeam's team, to put in a store of any kind.
var crew = Team{Name: "crew", Settings: Settings{ShutdownDeadline: Duration(45 * time.Second)}, Members: []MemberSpec{
	{Name: "ana", Runtime: RuntimeSpec{Kind: RuntimeExternal}},
	{Name: "bo", Runtime: RuntimeSpec{Kind: RuntimeExternal}},
	{Name: "cy", Runtime: RuntimeSpec{Kind: RuntimeExternal}},
}}

func inboxExists(t *testing.T, dir, member string) bool {
	t.Helper()
	p, err := teamdir.InboxPath(dir, member)
	if err != nil {
		t.Fatal(err)
	}
	_, err = os.Stat(p)
	return err == nil
}

func TestDecideApproveAndRejectTellTheTeammate(t *testing.T) {
	for _, tc := range []struct {
		approve  bool
		feedback string
		want     protocol.RequestStatus
	}{
		{true, "", protocol.RequestApproved},
		{true, "go, but cap it at 1,000 EUR", protocol.RequestApproved},
		{false, "split the transfer in two", protocol.RequestRejected},
	} {
		t.Run(string(tc.want)+"/"+tc.feedback, func(t *testing.T) {
			onEachStore(t, crew, func(t *testing.T, k *kept) {
				r := planRequest("pl-d0d0d0d0d0d0", "ana", time.Now())
				if err := k.st.CreateRequest(t.Context(), r); err != nil {
					t.Fatal(err)
				}
				got, err := k.decide(r.ID, protocol.AnswerEvent(tc.approve), tc.feedback)
				if err != nil {
					t.Fatal(err)
				}
				if got.Status != tc.want || got.ResolvedBy != protocol.Lead || got.Feedback != tc.feedback ||
					got.Approve == nil || *got.Approve != tc.approve {
					t.Fatalf("decided record = %+v", got)
				}
				if kept := k.request(r.ID); !reflect.DeepEqual(kept, got) {
					t.Fatalf("kept %+v\nreturned %+v", kept, got)
				}
				msgs := k.messagesTo(t, "ana")
				if len(msgs) != 1 {
					t.Fatalf("ana's inbox holds %d messages, want 1: %+v", len(msgs), msgs)
				}
				m := msgs[0]
				if m.Type != protocol.TypePlanApprovalResponse || m.From != protocol.Lead || m.To != "ana" ||
					m.RequestID != r.ID || m.Approve == nil || *m.Approve != tc.approve || m.Feedback != tc.feedback {
					t.Fatalf("response = %+v", m)
				}

				// A second decision, either way, is refused and tells no one.
				_, err = Decide(t.Context(), k.st, r.ID, protocol.AnswerEvent(!tc.approve), "changed my mind", "ui-2")
				var already *store.AlreadyError
				if !errors.As(err, &already) || already.Status != tc.want || already.By != protocol.Lead {
					t.Fatalf("second Decide: %v, want already %s by lead", err, tc.want)
				}
				if more := k.messagesTo(t, "ana"); len(more) != 1 {
					t.Fatalf("a refused decision sent more: %+v", more)
				}
			})
		})
	}
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

func TestRequestShutdownAsksALiveMember(t *testing.T) {
	onEachStore(t, crew, func(t *testing.T, k *kept) {
		// bo is running; ana has no status record yet (not started): both are asked.
		if err := k.st.PutMember(t.Context(), &protocol.Member{Name: "bo", Status: protocol.MemberWorking, Since: time.Now()}); err != nil {
			t.Fatal(err)
		}
		for _, member := range []string{"ana", "bo"} {
			before := time.Now()
			r, err := k.requestShutdown(member, "end of day")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(r.ID, "sd-") || r.Kind != protocol.KindShutdown || r.From != protocol.Lead ||
				r.To != member || r.Status != protocol.RequestPending || r.Reason != "end of day" {
				t.Fatalf("request = %+v", r)
			}
			// The team's shutdown_deadline (45s) sets the deadline.
			if ttl := r.Deadline.Sub(r.Created); ttl != 45*time.Second || r.Created.Before(before.Add(-time.Second)) {
				t.Errorf("created %v deadline %v: want a 45s deadline from now", r.Created, r.Deadline)
			}
			if kept := k.request(r.ID); kept == nil || kept.Status != protocol.RequestPending || kept.To != member {
				t.Fatalf("record kept = %+v", kept)
			}
			msgs := k.messagesTo(t, member)
			if len(msgs) != 1 {
				t.Fatalf("%s's inbox holds %+v, want one shutdown request", member, msgs)
			}
			if m := msgs[0]; m.Type != protocol.TypeShutdownRequest || m.From != protocol.Lead ||
				m.RequestID != r.ID || m.Reason != "end of day" {
				t.Fatalf("message = %+v", m)
			}
		}
	})
}

func TestRequestShutdownOfAStoppedMemberIsCancelledAtOnce(t *testing.T) {
	for _, st := range []protocol.MemberStatus{protocol.MemberStopped, protocol.MemberCrashed} {
		t.Run(string(st), func(t *testing.T) {
			dir := leadTeam(t)
			if err := WriteMember(dir, &protocol.Member{Name: "cy", Status: st, Since: time.Now()}); err != nil {
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
			onDisk, err := LoadRequest(dir, r.ID)
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

func TestSendAndBroadcast(t *testing.T) {
	onEachStore(t, crew, func(t *testing.T, k *kept) {
		if err := k.send(protocol.Lead, "bo", "status report, please"); err != nil {
			t.Fatal(err)
		}
		msgs := k.messagesTo(t, "bo")
		if len(msgs) != 1 || msgs[0].Type != protocol.TypeMessage || msgs[0].From != protocol.Lead ||
			msgs[0].Content != "status report, please" {
			t.Fatalf("bo got %+v", msgs)
		}
		if err := k.send(protocol.Lead, "../x", "hi"); err == nil {
			t.Error("Send to ../x accepted")
		}
		if err := k.send(protocol.Lead, "zed", "hi"); err == nil || !strings.Contains(err.Error(), `no member "zed"`) {
			t.Errorf("Send to a stranger: %v", err)
		}
		if err := k.send("zed", "bo", "hi"); err == nil || !strings.Contains(err.Error(), `no member "zed"`) {
			t.Errorf("Send from a stranger: %v", err)
		}
		if got := k.messagesTo(t, "zed"); len(got) != 0 {
			t.Errorf("a message to a stranger was kept: %+v", got)
		}
		if k.kind == "files" && inboxExists(t, k.dir, "zed") {
			t.Error("a message to a stranger made an inbox")
		}

		// From a member: everyone else hears it, the sender does not.
		n, err := Broadcast(t.Context(), k.st, k.tm, "ana", "lunch is here")
		if err != nil || n != 2 {
			t.Fatalf("Broadcast from ana = %d, %v; want 2", n, err)
		}
		if got := k.messagesTo(t, "ana"); len(got) != 0 {
			t.Errorf("the sender got its own broadcast: %+v", got)
		}
		// From the lead: every member hears it.
		if n, err := Broadcast(t.Context(), k.st, k.tm, protocol.Lead, "wrap up"); err != nil || n != 3 {
			t.Fatalf("Broadcast from lead = %d, %v; want 3", n, err)
		}
		got := map[string][]string{}
		for _, member := range []string{"ana", "bo", "cy"} {
			for _, m := range k.messagesTo(t, member) {
				if m.Type == protocol.TypeMessage {
					continue // bo's message from the lead, above
				}
				if m.Type != protocol.TypeBroadcast || m.To != member {
					t.Errorf("%s got %+v", member, m)
				}
				got[member] = append(got[member], m.From+": "+m.Content)
			}
			sort.Strings(got[member])
		}
		want := map[string][]string{
			"ana": {"lead: wrap up"},
			"bo":  {"ana: lunch is here", "lead: wrap up"},
			"cy":  {"ana: lunch is here", "lead: wrap up"},
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("broadcasts delivered %v, want %v", got, want)
		}
	})
}
