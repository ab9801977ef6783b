package replay

import (
	"fmt"
	"testing"
	"time"

	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/team"
)

// synthTimeline is a timeline of n events built by hand, as a long session
// has them: members moving, plans made and decided, messages, calls. It
// ends a minute ago; events are a second apart, with an hour's idle spell
// in the middle.
func synthTimeline(t testing.TB, n int) *Timeline {
	t.Helper()
	tj := team.DemoTeam()
	tm, err := team.Parse(tj)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"reservas", "finanzas", "data", "auditor"}
	start := time.Now().Add(-time.Minute - time.Hour - time.Duration(n)*time.Second).UTC()
	tl := &Timeline{TeamJSON: tj, Team: tm}
	statuses := []protocol.MemberStatus{protocol.MemberStarting, protocol.MemberWorking, protocol.MemberIdle}
	open := map[int]*protocol.Request{}
	for i := range n {
		at := start.Add(time.Duration(i) * time.Second)
		if i >= n/2 {
			at = at.Add(time.Hour)
		}
		who := names[i%len(names)]
		e := Event{At: at}
		switch i % 5 {
		case 0:
			e.Kind = KindStatus
			e.Member = &protocol.Member{Name: who, Status: statuses[(i/5)%len(statuses)], Since: at, Activity: fmt.Sprintf("step %d", i)}
		case 1:
			e.Kind = KindRequest
			if r := open[i%4]; r != nil {
				c := *r
				c.History = append(append([]protocol.Transition(nil), r.History...), protocol.Transition{At: at, From: protocol.RequestPending, To: protocol.RequestApproved, By: protocol.Lead})
				c.Status, c.Approve, c.ResolvedBy, c.ResolvedAt = protocol.RequestApproved, protocol.Bool(true), protocol.Lead, &at
				e.Request, open[i%4] = &c, nil
			} else {
				r := protocol.NewRequest(protocol.KindPlan, fmt.Sprintf("pl-%06d", i), who, protocol.Lead, at, 10*time.Minute)
				r.Plan = "plan " + r.ID
				e.Request, open[i%4] = &r, &r
			}
		case 2, 3:
			e.Kind = KindMessage
			e.Inbox = names[(i+1)%len(names)]
			e.Offset = int64(i) * 100
			e.Message = &protocol.Message{ID: fmt.Sprintf("m%d", i), Type: protocol.TypeMessage, From: who, To: e.Inbox, TS: at, Content: fmt.Sprintf("message %d", i)}
		case 4:
			e.Kind = KindSpan
			s := trace.Span{Span: trace.SpanStart, TS: at, RequestID: fmt.Sprintf("req-%d", i/10), CorrelationID: fmt.Sprintf("corr-%d", i/40),
				Caller: who, Target: "finanzas", Action: "pagar_factura"}
			if (i/5)%2 == 1 {
				s.Span, s.Status, s.DurationMS = trace.SpanEnd, "ok", 300
			}
			e.Span = &s
		}
		tl.Events = append(tl.Events, e)
	}
	return tl
}
