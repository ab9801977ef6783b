package supervisor

import (
	"testing"

	"huddle/internal/testkit/files"
	"huddle/internal/testkit/teamkit"
	"huddle/protocol"
	"huddle/team"
)

// TestSettleByTheAnswersEvent: an answer line resolves a pending request by
// its event; on a final request the same event is a repeat, any other is
// stale.
func TestSettleByTheAnswersEvent(t *testing.T) {
	dir := t.TempDir()
	r := teamkit.PlanRequest("pl-5e7713d0a5e1", "reservas", teamkit.T0)
	teamkit.MustCreate(t, dir, r)
	sh := newShared(t.Context(), files.Open(t, dir))
	got, err := sh.settle(r, team.Resolution{Event: protocol.EventReject, By: protocol.Lead, Text: "smaller"})
	if err != nil || got.Status != protocol.RequestRejected || got.Feedback != "smaller" {
		t.Fatalf("settle a pending plan: %+v, %v", got, err)
	}
	if again, err := sh.settle(got, team.Resolution{Event: protocol.EventReject, By: protocol.Lead}); err != nil || again.Status != protocol.RequestRejected {
		t.Fatalf("the same answer again: %+v, %v", again, err)
	}
	_, err = sh.settle(got, team.Resolution{Event: protocol.EventApprove, By: protocol.Lead})
	if want := "stale answer: request pl-5e7713d0a5e1 already rejected by lead"; err == nil || err.Error() != want {
		t.Fatalf("the other answer: %v, want %q", err, want)
	}
}
