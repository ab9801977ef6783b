package replay

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/store"
	"huddle/store/storekinds"
	"huddle/store/storetest"
)

const storeTeam = `{"name":"crew","members":[
  {"name":"ana","role":"planner","runtime":{"kind":"external"}},
  {"name":"bo","runtime":{"kind":"external"}},
  {"name":"cy","runtime":{"kind":"external"}}]}`

// TestReadBuildsAStoresTimeline: on both stores, read without a team directory, a team with member
// records, a plan decided and archived, a plan pending, a call's two spans
// and a message no one consumed reads back as the events of each, the
// header saying what a store's timeline leaves out; the export of it reads
// back the same, and the message is still there for its member's consumer.
func TestReadBuildsAStoresTimeline(t *testing.T) {
	for name, open := range storekinds.Open {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			st := open(t)
			if _, err := Read(ctx, st, ""); err == nil {
				t.Fatal("Read of an empty store: no error")
			}
			if err := st.PutConfig(ctx, store.ConfigTeam, []byte(storeTeam)); err != nil {
				t.Fatal(err)
			}
			t0 := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
			ana := protocol.Member{Name: "ana", Status: protocol.MemberWorking, Activity: "planning", Since: t0.Add(time.Second)}
			bo := protocol.Member{Name: "bo", Runtime: "external", Status: protocol.MemberIdle, Since: t0.Add(2 * time.Second)}
			for _, m := range []*protocol.Member{&ana, &bo} {
				if err := st.PutMember(ctx, m); err != nil {
					t.Fatal(err)
				}
			}
			decided := protocol.NewRequest(protocol.KindPlan, protocol.NewRequestID(protocol.KindPlan), "ana", protocol.Lead, t0.Add(3*time.Second), time.Hour)
			decided.Plan = "first plan"
			pending := protocol.NewRequest(protocol.KindPlan, protocol.NewRequestID(protocol.KindPlan), "bo", protocol.Lead, t0.Add(5*time.Second), time.Hour)
			pending.Plan = "second plan"
			for _, r := range []*protocol.Request{&decided, &pending} {
				if err := st.CreateRequest(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := st.Decide(ctx, decided.ID, store.Decision{Event: protocol.EventApprove, By: protocol.Lead, Text: "go", At: t0.Add(4 * time.Second)}); err != nil {
				t.Fatal(err)
			}
			if err := st.Archive(ctx, decided.ID); err != nil {
				t.Fatal(err)
			}
			req := protocol.InvocationRequest{RequestID: protocol.NewInvocationID(), CorrelationID: protocol.NewCorrelationID(),
				Caller: "ana", Target: "cy", Action: "audit", Prompt: "invoice 9", Hop: 1, TimeoutSec: 60}
			res := protocol.Fail(&req, 12, protocol.ErrIPC, "no answer", nil)
			for _, sp := range []trace.Span{trace.Start(req, t0.Add(6*time.Second)), trace.End(req, res, "", false, t0.Add(7*time.Second))} {
				if err := st.AppendSpan(ctx, sp); err != nil {
					t.Fatal(err)
				}
			}
			msg := protocol.NewMessage(protocol.TypeMessage, protocol.Lead, "bo")
			msg.Content, msg.TS = "still unread", t0.Add(8*time.Second)
			if err := st.Append(ctx, "bo", &msg); err != nil {
				t.Fatal(err)
			}

			tl, err := Read(ctx, st, "")
			if err != nil {
				t.Fatal(err)
			}
			if tl.Team.Name != "crew" || tl.Store == nil {
				t.Fatalf("timeline of team %q, store %v; want crew, from a store", tl.Team.Name, tl.Store)
			}
			for _, want := range []string{LeftOutHistories, LeftOutMessages, LeftOutSpans, LeftOutLogs} {
				if !slices.Contains(tl.Store.LeftOut, want) {
					t.Errorf("left out %q, want it to say %q", tl.Store.LeftOut, want)
				}
			}
			var kinds []string
			for _, e := range tl.Events {
				switch e.Kind {
				case KindStatus:
					kinds = append(kinds, "status "+e.Member.Name+" "+string(e.Member.Status))
					if want := map[string]time.Time{"ana": ana.Since, "bo": bo.Since}[e.Member.Name]; !e.At.Equal(want) {
						t.Errorf("%s's status at %v, want its since %v", e.Member.Name, e.At, want)
					}
					if e.Member.Name == "ana" && (e.Member.Role != "planner" || e.Member.Runtime != "external" || e.Member.Activity != "planning") {
						t.Errorf("ana's status event %+v, want the role and runtime of team.json and its activity", e.Member)
					}
				case KindRequest:
					who := map[string]string{decided.ID: "decided", pending.ID: "pending"}[e.Request.ID]
					kinds = append(kinds, "request "+who+" "+string(e.Request.Status))
				case KindMessage:
					kinds = append(kinds, "message "+e.Inbox+" "+e.Message.Content)
				case KindSpan:
					kinds = append(kinds, "span "+e.Span.Span+" "+e.Span.Target)
				}
			}
			want := []string{
				"status ana working", "status bo idle",
				"request decided pending", "request decided approved", "request pending pending",
				"span start cy", "span end cy",
				"message bo still unread",
			}
			if !slices.Equal(kinds, want) {
				t.Fatalf("events\n got %q\nwant %q", kinds, want)
			}
			f := NewFold(tl)
			f.Seek(f.Len())
			snap := f.Snapshot()
			if snap.Pending != 1 || snap.Requests[0].ID != pending.ID || snap.Chains.Len() != 1 {
				t.Fatalf("folded: %d pending, requests %+v, %d chains; want the second plan pending and the call", snap.Pending, snap.Requests, snap.Chains.Len())
			}

			var b bytes.Buffer
			if err := Export(&b, tl, time.Now()); err != nil {
				t.Fatal(err)
			}
			back, err := ReadExport(&b, "store.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			if back.Store == nil || !slices.Equal(back.Store.LeftOut, tl.Store.LeftOut) {
				t.Fatalf("read back left out %+v, want %q", back.Store, tl.Store.LeftOut)
			}
			sameEvents(t, back.Events, tl.Events)

			// Read, not consumed: bo's consumer still gets the message.
			if got := storetest.Drain(t, ctx, st, "bo", 1); len(got) != 1 || got[0].ID != msg.ID {
				t.Fatalf("bo's inbox after the export = %+v, want the unread message", got)
			}
		})
	}
}
