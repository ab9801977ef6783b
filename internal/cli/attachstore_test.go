package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"huddle/protocol"
	"huddle/store"
	"huddle/store/natsstore"
	"huddle/tui"
)

// TestAttachStoreApprovesAPlanWithTheKey: the UI wired as huddle attach
// --store wires it, on a team in an embedded NATS server: a member's plan
// put in the store by another handle shows pending, a approves it, the
// store holds the lead's decision and the member's inbox the answer, and
// the screen shows the request approved (read back through the store's
// watch).
func TestAttachStoreApprovesAPlanWithTheKey(t *testing.T) {
	url := natsTeam(t)
	writer := openTeamStore(t, url, true)
	ui := openTestStore(t, url) // the UI's own connection, as another machine's
	opts := storeRunOptions(t.Context(), ui, natsstore.Redact(url))
	st := tui.NewStyles(false, true)
	tm := teatest.NewTestModel(t, tui.New(tui.Options{Styles: &st, Footer: opts.Footer, Actions: opts.Actions, NoFeed: opts.NoFeed}), teatest.WithInitialTermSize(120, 36))
	stop, err := opts.Connect(t.Context(), tm.Send)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tm.Quit()
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	screen := func(texts ...string) {
		t.Helper()
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
			for _, text := range texts {
				if !bytes.Contains(b, []byte(text)) {
					return false
				}
			}
			return true
		}, teatest.WithDuration(20*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	}
	key := func(s string) { tm.Send(tea.KeyPressMsg{Code: []rune(s)[0], Text: s}) }
	screen("attached to the store "+natsstore.Redact(url), "alice", "bob")

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := writer.PutMember(ctx, &protocol.Member{Name: "alice", Role: "test", Runtime: "script", Status: protocol.MemberAwaitingApproval, Activity: "waiting for approval", Since: time.Now()}); err != nil {
		t.Fatal(err)
	}
	const id = "pl-a77ac4ed0001"
	storePlan(t, writer, id, "alice")
	screen(id, "⚑ 1 pending")

	key("2")
	key("k") // the person moved to it: no grace
	key("a")
	screen("approved " + id + ": alice may go on")
	r, err := writer.Request(ctx, id)
	if err != nil || r.Status != protocol.RequestApproved || r.ResolvedBy != protocol.Lead {
		t.Fatalf("the store holds %+v, %v; want approved by the lead", r, err)
	}
	got := consumeN(t, writer, "alice", 1)
	if got[0].Type != protocol.TypePlanApprovalResponse || got[0].RequestID != id || got[0].Approve == nil || !*got[0].Approve {
		t.Fatalf("alice's inbox holds %+v, want the approval of %s", got[0], id)
	}
	screen("no pending requests")

	// A second decision from elsewhere loses, and the key says who won.
	if _, err := writer.Decide(ctx, id, store.Decision{Event: protocol.EventReject, By: protocol.Lead}); err == nil {
		t.Fatal("a second decision was taken")
	} else if already := new(store.AlreadyError); !errors.As(err, &already) {
		t.Fatalf("a second decision: %v", err)
	}
}

// TestAttachStoreNeverShowsTheToken: huddle attach --store on a terminal,
// with the token in the URL (and then in $HUDDLE_STORE), shows the team
// and the store's address redacted, never the token, and q quits with 0.
func TestAttachStoreNeverShowsTheToken(t *testing.T) {
	const token = "s3cr3t-attach-t0ken"
	srv, err := natsstore.StartServer(natsstore.ServerOptions{Addr: "127.0.0.1:0", DataDir: t.TempDir(), Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	url := strings.Replace(srv.URL(fmt.Sprintf("crew%d", storeTeams.Add(1))), "nats://", "nats://"+token+"@", 1)
	openTeamStore(t, url, true)
	for _, run := range []struct {
		env  []string
		args []string
	}{
		{nil, []string{"attach", "--store", url}},
		{[]string{"HUDDLE_STORE=" + url}, []string{"attach"}},
	} {
		p := startOnPTY(t, t.TempDir(), run.env, nil, run.args...)
		p.waitFor(t, "attached to the store nats://***@")
		p.waitFor(t, "alice")
		p.typeKeys(t, "q")
		if code := p.exit(t); code != exitOK {
			t.Fatalf("huddle %v: exit %d; the terminal shows %s", run.args, code, p.outputTail())
		}
		if strings.Contains(p.output(), token) {
			t.Fatalf("huddle %v showed the token", run.args)
		}
	}
	// Refused before any screen: one line, no token.
	r := huddle(t, "attach", "--store", url, "--dir", t.TempDir())
	r.wantError(t, exitUsage, "stdout is not a terminal", "attach --store without a terminal")
	if strings.Contains(r.stdout+r.stderr, token) {
		t.Fatalf("attach --store without a terminal showed the token: %q", r.stderr)
	}
}
