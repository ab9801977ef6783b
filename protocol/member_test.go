package protocol_test

import (
	"slices"
	"strings"
	"testing"

	"huddle/protocol"
)

const (
	starting = protocol.MemberStarting
	working  = protocol.MemberWorking
	idle     = protocol.MemberIdle
	awaiting = protocol.MemberAwaitingApproval
	revising = protocol.MemberRevising
	stopping = protocol.MemberStopping
	stopped  = protocol.MemberStopped
	crashed  = protocol.MemberCrashed
)

type edge struct{ from, to protocol.MemberStatus }

// memberLegal is the teammate machine of docs/ARCHITECTURE.md, "State machines",, written out edge by edge.
var memberLegal = map[edge]bool{
	// starting → working | idle
	{starting, working}: true,
	{starting, idle}:    true,
	// working ⇄ idle
	{working, idle}: true,
	{idle, working}: true,
	// working → awaiting_approval → working (approved) | revising (rejected)
	{working, awaiting}:  true,
	{awaiting, working}:  true,
	{awaiting, revising}: true,
	// revising → awaiting_approval
	{revising, awaiting}: true,
	// any live state → stopping
	{starting, stopping}: true,
	{working, stopping}:  true,
	{idle, stopping}:     true,
	{awaiting, stopping}: true,
	{revising, stopping}: true,
	// stopping → stopped
	{stopping, stopped}: true,
	// any non-final state → crashed
	{starting, crashed}: true,
	{working, crashed}:  true,
	{idle, crashed}:     true,
	{awaiting, crashed}: true,
	{revising, crashed}: true,
	{stopping, crashed}: true,
}

func TestMemberStatusesList(t *testing.T) {
	want := []protocol.MemberStatus{"starting", "working", "idle", "awaiting_approval", "revising", "stopping", "stopped", "crashed"}
	if !slices.Equal(protocol.MemberStatuses, want) {
		t.Fatalf("MemberStatuses = %v, want %v", protocol.MemberStatuses, want)
	}
}

func TestMemberTransitionExhaustive(t *testing.T) {
	legalSeen := 0
	for _, from := range protocol.MemberStatuses {
		for _, to := range protocol.MemberStatuses {
			err := from.Transition(to)
			if memberLegal[edge{from, to}] {
				legalSeen++
				if err != nil {
					t.Errorf("%s → %s: %v, want legal", from, to, err)
				}
				continue
			}
			if err == nil {
				t.Errorf("%s → %s: nil, want illegal", from, to)
				continue
			}
			if !strings.Contains(err.Error(), string(from)) {
				t.Errorf("%s → %s: error %q does not name the state", from, to, err)
			}
			if !from.IsTerminal() && !strings.Contains(err.Error(), string(to)) {
				t.Errorf("%s → %s: error %q does not name the target", from, to, err)
			}
		}
	}
	if legalSeen != len(memberLegal) {
		t.Fatalf("checked %d legal edges, table has %d", legalSeen, len(memberLegal))
	}
}

func TestMemberTransitionFinalStatesNeverMove(t *testing.T) {
	for _, from := range []protocol.MemberStatus{stopped, crashed} {
		for _, to := range protocol.MemberStatuses {
			if err := from.Transition(to); err == nil {
				t.Errorf("%s → %s allowed; %s is final", from, to, from)
			}
		}
	}
}

func TestMemberTransitionUnknown(t *testing.T) {
	for _, bad := range []protocol.MemberStatus{"", "bogus", "WORKING", "dead"} {
		for _, s := range protocol.MemberStatuses {
			if err := bad.Transition(s); err == nil || !strings.Contains(err.Error(), "unknown") {
				t.Errorf("%q → %s: err = %v, want unknown status", bad, s, err)
			}
			if err := s.Transition(bad); err == nil || !strings.Contains(err.Error(), "unknown") {
				t.Errorf("%s → %q: err = %v, want unknown status", s, bad, err)
			}
		}
	}
}

func TestMemberStatusPredicates(t *testing.T) {
	tests := []struct {
		s                     protocol.MemberStatus
		known, terminal, live bool
	}{
		{starting, true, false, true},
		{working, true, false, true},
		{idle, true, false, true},
		{awaiting, true, false, true},
		{revising, true, false, true},
		{stopping, true, false, false},
		{stopped, true, true, false},
		{crashed, true, true, false},
		{"", false, false, false},
		{"bogus", false, false, false},
	}
	for _, tt := range tests {
		if got := tt.s.Known(); got != tt.known {
			t.Errorf("%q.Known() = %v, want %v", tt.s, got, tt.known)
		}
		if got := tt.s.IsTerminal(); got != tt.terminal {
			t.Errorf("%q.IsTerminal() = %v, want %v", tt.s, got, tt.terminal)
		}
		if got := tt.s.IsLive(); got != tt.live {
			t.Errorf("%q.IsLive() = %v, want %v", tt.s, got, tt.live)
		}
	}
}

func TestMemberValidate(t *testing.T) {
	m := protocol.Member{Name: "reservas", Status: working}
	if err := m.Validate(); err != nil {
		t.Fatalf("valid member: %v", err)
	}
	lead := protocol.Member{Name: protocol.Lead, Status: idle}
	if err := lead.Validate(); err != nil {
		t.Fatalf("lead record: %v", err)
	}
	for _, bad := range []protocol.Member{
		{Name: "", Status: working},
		{Name: "../x", Status: working},
		{Name: "a/b", Status: working},
		{Name: "reservas", Status: ""},
		{Name: "reservas", Status: "bogus"},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v: Validate = nil, want an error", bad)
		}
	}
}
