package tui

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"huddle/inbox"
	"huddle/internal/testkit/dirrecords"
	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/store/filestore"
	"huddle/team"
	"huddle/team/view"
)

const roleEnv = "HUDDLE_TUI_TEST_ROLE"

func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == "attach" {
		screen, err := settledScreen(os.Getenv("DIR"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Print(screen)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// settledScreen connects a model to dir the way `huddle attach` does, waits
// for the snapshot that holds the fixture (one pending plan, a rejected one,
// two messages, one chain) and renders it at 120×36 with the fixed clock.
func settledScreen(dir string) (string, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	snaps := make(chan view.Snapshot, 64)
	fs, err := filestore.Open(dir)
	if err != nil {
		return "", err
	}
	defer fs.Close()
	stop, err := Connect(ctx, fs, func(msg tea.Msg) { snaps <- view.Snapshot(msg.(SnapshotMsg)) })
	if err != nil {
		return "", err
	}
	defer stop()
	st := NewStyles(false, true)
	m := New(Options{Dir: dir, Styles: &st, Now: (&testClock{now: t0}).Now, Footer: "attached"}) // it only draws
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 36})
	deadline := time.After(15 * time.Second)
	for {
		select {
		case s := <-snaps:
			m.Update(SnapshotMsg(s))
			if s.Pending == 1 && len(s.Requests) == 2 && len(s.Messages) == 2 && s.Chains.Len() == 1 && s.Chains.At(0).Rows[0].Call.Status == trace.CallOK {
				return m.View().Content, nil
			}
		case <-deadline:
			return "", fmt.Errorf("the fixture never showed up in a snapshot")
		}
	}
}

// TestAttachInASecondProcessSeesTheSame: a second process attached to the
// same directory renders exactly the screen the first one does.
func TestAttachInASecondProcessSeesTheSame(t *testing.T) {
	dir := t.TempDir()
	if err := team.Init(dir); err != nil {
		t.Fatal(err)
	}
	for _, mem := range []protocol.Member{
		{Name: "reservas", Role: "bookings", Status: protocol.MemberAwaitingApproval, Activity: "waiting for approval", Since: t0},
		{Name: "finanzas", Role: "finance", Status: protocol.MemberWorking, Activity: "closing open invoices", Since: t0},
	} {
		if err := dirrecords.WriteMember(dir, &mem); err != nil {
			t.Fatal(err)
		}
	}
	pending := planRequest("pl-111111111111", "reservas", "book room 4", t0.Add(-time.Minute))
	rejected := planRequest("pl-222222222222", "finanzas", "move 2,000 EUR", t0.Add(-2*time.Minute))
	for _, r := range []*protocol.Request{&pending, &rejected} {
		if err := dirrecords.CreateRequest(dir, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := dirrecords.Resolve(dir, rejected.ID, team.Resolution{Event: protocol.EventReject, By: "lead", Text: "1,000 EUR only"}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*protocol.Message{msg2("reservas", "finanzas", "invoice coming"), msg2("finanzas", "lead", "ledger closed")} {
		if err := inbox.Append(dir, m.To, m); err != nil {
			t.Fatal(err)
		}
	}
	start := trace.Span{Span: trace.SpanStart, TS: t0, RequestID: "req-1", CorrelationID: "corr-1", Caller: "reservas", Target: "finanzas", Action: "pagar_factura"}
	end := start
	end.Span, end.Status, end.DurationMS = trace.SpanEnd, "ok", 12
	for _, s := range []trace.Span{start, end} {
		if err := trace.AppendSpan(dir, s); err != nil {
			t.Fatal(err)
		}
	}

	first, err := settledScreen(dir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), roleEnv+"=attach", "DIR="+dir)
	cmd.Stderr = os.Stderr
	second, err := cmd.Output()
	if err != nil {
		t.Fatalf("second process: %v", err)
	}
	if string(second) != first {
		t.Fatalf("the second process shows another screen.\nfirst:\n%s\nsecond:\n%s", first, second)
	}
	for _, want := range []string{"pl-111111111111", "pl-222222222222", "◐ reservas", "⠋ finanzas", "⚑ 1 pending"} {
		if !strings.Contains(first, want) {
			t.Fatalf("the screen lacks %q:\n%s", want, first)
		}
	}
}

func msg2(from, to, text string) *protocol.Message {
	m := protocol.NewMessage(protocol.TypeMessage, from, to)
	m.Content = text
	return &m
}
