package team_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit/teamkit"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
	"huddle/teamdir"
)

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
			teamkit.OnEachStore(t, teamkit.Crew, func(t *testing.T, k *teamkit.Kept) {
				r := teamkit.PlanRequest("pl-d0d0d0d0d0d0", "ana", time.Now())
				if err := k.St.CreateRequest(t.Context(), r); err != nil {
					t.Fatal(err)
				}
				got, err := k.Decide(r.ID, protocol.AnswerEvent(tc.approve), tc.feedback)
				if err != nil {
					t.Fatal(err)
				}
				if got.Status != tc.want || got.ResolvedBy != protocol.Lead || got.Feedback != tc.feedback ||
					got.Approve == nil || *got.Approve != tc.approve {
					t.Fatalf("decided record = %+v", got)
				}
				if kept := k.Request(r.ID); !reflect.DeepEqual(kept, got) {
					t.Fatalf("kept %+v\nreturned %+v", kept, got)
				}
				msgs := k.MessagesTo(t, "ana")
				if len(msgs) != 1 {
					t.Fatalf("ana's inbox holds %d messages, want 1: %+v", len(msgs), msgs)
				}
				m := msgs[0]
				if m.Type != protocol.TypePlanApprovalResponse || m.From != protocol.Lead || m.To != "ana" ||
					m.RequestID != r.ID || m.Approve == nil || *m.Approve != tc.approve || m.Feedback != tc.feedback {
					t.Fatalf("response = %+v", m)
				}

				// A second decision, either way, is refused and tells no one.
				_, err = team.Decide(t.Context(), k.St, r.ID, protocol.AnswerEvent(!tc.approve), "changed my mind", "ui-2")
				var already *store.AlreadyError
				if !errors.As(err, &already) || already.Status != tc.want || already.By != protocol.Lead {
					t.Fatalf("second Decide: %v, want already %s by lead", err, tc.want)
				}
				if more := k.MessagesTo(t, "ana"); len(more) != 1 {
					t.Fatalf("a refused decision sent more: %+v", more)
				}
			})
		})
	}
}

func TestRequestShutdownAsksALiveMember(t *testing.T) {
	teamkit.OnEachStore(t, teamkit.Crew, func(t *testing.T, k *teamkit.Kept) {
		// bo is running; ana has no status record yet (not started): both are asked.
		if err := k.St.PutMember(t.Context(), &protocol.Member{Name: "bo", Status: protocol.MemberWorking, Since: time.Now()}); err != nil {
			t.Fatal(err)
		}
		for _, member := range []string{"ana", "bo"} {
			before := time.Now()
			r, err := k.RequestShutdown(member, "end of day")
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
			if kept := k.Request(r.ID); kept == nil || kept.Status != protocol.RequestPending || kept.To != member {
				t.Fatalf("record kept = %+v", kept)
			}
			msgs := k.MessagesTo(t, member)
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

func TestSendAndBroadcast(t *testing.T) {
	teamkit.OnEachStore(t, teamkit.Crew, func(t *testing.T, k *teamkit.Kept) {
		if err := k.Send(protocol.Lead, "bo", "status report, please"); err != nil {
			t.Fatal(err)
		}
		msgs := k.MessagesTo(t, "bo")
		if len(msgs) != 1 || msgs[0].Type != protocol.TypeMessage || msgs[0].From != protocol.Lead ||
			msgs[0].Content != "status report, please" {
			t.Fatalf("bo got %+v", msgs)
		}
		if err := k.Send(protocol.Lead, "../x", "hi"); err == nil {
			t.Error("Send to ../x accepted")
		}
		if err := k.Send(protocol.Lead, "zed", "hi"); err == nil || !strings.Contains(err.Error(), `no member "zed"`) {
			t.Errorf("Send to a stranger: %v", err)
		}
		if err := k.Send("zed", "bo", "hi"); err == nil || !strings.Contains(err.Error(), `no member "zed"`) {
			t.Errorf("Send from a stranger: %v", err)
		}
		if got := k.MessagesTo(t, "zed"); len(got) != 0 {
			t.Errorf("a message to a stranger was kept: %+v", got)
		}
		if k.Kind == "files" && inboxMade(k.Dir, "zed") {
			t.Error("a message to a stranger made an inbox")
		}

		// From a member: everyone else hears it, the sender does not.
		n, err := team.Broadcast(t.Context(), k.St, k.Tm, "ana", "lunch is here")
		if err != nil || n != 2 {
			t.Fatalf("Broadcast from ana = %d, %v; want 2", n, err)
		}
		if got := k.MessagesTo(t, "ana"); len(got) != 0 {
			t.Errorf("the sender got its own broadcast: %+v", got)
		}
		// From the lead: every member hears it.
		if n, err := team.Broadcast(t.Context(), k.St, k.Tm, protocol.Lead, "wrap up"); err != nil || n != 3 {
			t.Fatalf("Broadcast from lead = %d, %v; want 3", n, err)
		}
		got := map[string][]string{}
		for _, member := range []string{"ana", "bo", "cy"} {
			for _, m := range k.MessagesTo(t, member) {
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

// inboxMade is whether member has an inbox file in the team directory dir.
func inboxMade(dir, member string) bool {
	_, err := os.Stat(filepath.Join(teamdir.InboxDirPath(dir), member+".jsonl"))
	return err == nil
}
