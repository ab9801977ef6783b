package store

import (
	"errors"
	"testing"
	"time"

	"huddle/protocol"
)

func TestConfigNames(t *testing.T) {
	for _, ok := range []string{"team.json", ".puruto-ipc.json", "ipc/alice.puruto-ipc.json", "ipc/a.b-c_d.puruto-ipc.json", MemberPolicyConfig("lead")} {
		if err := ValidateConfigName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "team.json/", "./team.json", "members/alice.json", "ipc/.puruto-ipc.json", "ipc/../x.puruto-ipc.json", "ipc/a/b.puruto-ipc.json", "ipc/Alice.puruto-ipc.json", "/etc/passwd", "ipc/alice.json"} {
		if err := ValidateConfigName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestTeamNames(t *testing.T) {
	for _, ok := range []string{"demo", "my-team_2"} {
		if err := ValidateTeam(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a.b", "Team", "a b", "-x", "a/b", "a*", "a>"} {
		if err := ValidateTeam(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestCheckDecision(t *testing.T) {
	r := protocol.NewRequest(protocol.KindShutdown, "sd-1", protocol.Lead, "alice", time.Now(), time.Hour)
	if err := CheckDecision(&r, Decision{Event: protocol.EventApprove, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	if err := CheckDecision(&r, Decision{Event: protocol.EventApprove}); err == nil {
		t.Fatal("a decision by nobody passed")
	}
	if err := ApplyDecision(&r, Decision{Event: protocol.EventReject, By: "alice", Text: "busy", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if r.Status != protocol.RequestRejected || r.ResponseReason != "busy" || r.ResolvedBy != "alice" {
		t.Fatalf("applied: %+v", r)
	}
	var already *AlreadyError
	if err := CheckDecision(&r, Decision{Event: protocol.EventApprove, By: "x"}); !errors.As(err, &already) || already.By != "alice" {
		t.Fatalf("a final request: %v", err)
	}
}
