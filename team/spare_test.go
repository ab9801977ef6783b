package team

import (
	"bytes"
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/protocol"
	"huddle/teamdir"
)

// dotFiles lists the temp files in one of the team directory's folders.
func dotFiles(t *testing.T, dir string) []string {
	t.Helper()
	out, err := listDotFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func listDotFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// TestSpareRecordReplacesTheRecordWhole: a spare leaves the record as it
// is until it is written; written, the record reads as the new one (the
// padding is white space a JSON reader skips), the spare's size did not
// change, and nothing is left beside the record. A next record too long
// for the spare is refused untouched, and the spare goes.
func TestSpareRecordReplacesTheRecordWhole(t *testing.T) {
	dir := t.TempDir()
	old := &protocol.Member{Name: "alice", Runtime: RuntimeScript, Status: protocol.MemberAwaitingApproval,
		Activity: "waiting for approval of pl-0123456789ab", Since: time.Now().UTC(), RequestID: "pl-0123456789ab"}
	if err := WriteMember(dir, old); err != nil {
		t.Fatal(err)
	}
	s, err := makeSpare(dir, old)
	if err != nil {
		t.Fatal(err)
	}
	if got := dotFiles(t, teamdir.MembersDirPath(dir)); len(got) != 1 {
		t.Fatalf("members/ holds %v, want the spare alone", got)
	}
	if got, err := LoadMember(dir, "alice"); err != nil || !reflect.DeepEqual(got, old) {
		t.Fatalf("with a spare made, the record reads %+v (%v), want it unchanged", got, err)
	}
	next := *old
	next.Status, next.Activity, next.RequestID, next.Step = protocol.MemberWorking, "plan approved", "", 1
	next.Counters.Received = 12345
	ok, err := s.write(dir, &next)
	if !ok || err != nil {
		t.Fatalf("write over the spare: ok %v, %v", ok, err)
	}
	if got, err := LoadMember(dir, "alice"); err != nil || !reflect.DeepEqual(got, &next) {
		t.Fatalf("the record reads %+v (%v), want %+v", got, err, next)
	}
	p, _ := teamdir.MemberPath(dir, "alice")
	raw := readFile(t, p)
	oldJSON, _ := memberJSON(old)
	nextJSON, _ := memberJSON(&next)
	if len(raw) != len(oldJSON)+spareSlack || !bytes.HasPrefix(raw, nextJSON) || len(bytes.TrimRight(raw[len(nextJSON):], " ")) != 0 {
		t.Fatalf("the record file is %d bytes %q, want the new record padded with spaces to %d", len(raw), raw, len(oldJSON)+spareSlack)
	}
	if got := dotFiles(t, teamdir.MembersDirPath(dir)); len(got) != 0 {
		t.Fatalf("members/ still holds %v", got)
	}

	s, err = makeSpare(dir, &next)
	if err != nil {
		t.Fatal(err)
	}
	long := next
	long.Activity = strings.Repeat("revising: too long for the spare ", 40)
	if ok, err := s.write(dir, &long); ok || err != nil {
		t.Fatalf("a record longer than the spare: ok %v, %v; want it refused", ok, err)
	}
	if got, err := LoadMember(dir, "alice"); err != nil || !reflect.DeepEqual(got, &next) {
		t.Fatalf("a refused write changed the record: %+v (%v)", got, err)
	}
	if got := dotFiles(t, teamdir.MembersDirPath(dir)); len(got) != 0 {
		t.Fatalf("members/ still holds %v after a refused write", got)
	}
}

// TestPlanApprovalWritesOverTheSpare: a teammate awaiting its plan has a
// spare beside its record; the approval's write goes over it (the record,
// read as the move is told, is padded and none of its temp files is left).
// A rejection whose feedback does not fit a spare is written the ordinary
// way, and leaves nothing beside the record either.
func TestPlanApprovalWritesOverTheSpare(t *testing.T) {
	dir := t.TempDir()
	writeTeam(t, dir, Team{Name: "t", Members: []MemberSpec{
		scripted("alice", OnShutdownApprove, Step{Plan: "first"}, Step{Wait: Duration(time.Hour)}),
		scripted("bob", OnShutdownApprove, Step{Plan: "first"}, Step{Wait: Duration(time.Hour)}),
	}})
	type seen struct {
		raw   []byte
		spare []string
	}
	// Read in the event's callback: the teammate tells its move after
	// writing it and before it writes anything else.
	moved := make(chan seen, 4)
	opened := make(chan protocol.Member, 4)
	ctx, cancel := context.WithCancel(context.Background())
	rt, err := Start(ctx, dir, Options{OnEvent: func(e Event) {
		if e["event"] != "member_status" {
			return
		}
		name, _ := e["member"].(string)
		activity, _ := e["activity"].(string)
		switch {
		case e["status"] == string(protocol.MemberAwaitingApproval):
			if m, err := LoadMember(dir, name); err == nil {
				opened <- *m
			}
		case activity == "plan approved" || strings.HasPrefix(activity, "revising"):
			p, _ := teamdir.MemberPath(dir, name)
			raw, _ := os.ReadFile(p)
			// Its own temp files: the other teammate may be writing.
			var spare []string
			all, _ := listDotFiles(teamdir.MembersDirPath(dir))
			for _, f := range all {
				if strings.HasPrefix(f, teamdir.TempPrefix+name+".json-") {
					spare = append(spare, f)
				}
			}
			moved <- seen{raw: raw, spare: spare}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		if err := rt.Wait(); err != nil {
			t.Error(err)
		}
	}()
	receive := func(what string, c chan seen) seen {
		t.Helper()
		select {
		case s := <-c:
			return s
		case <-time.After(10 * time.Second):
			t.Fatalf("timed out waiting for %s", what)
			return seen{}
		}
	}
	waitOpened := func() map[string]string {
		t.Helper()
		ids := map[string]string{}
		for len(ids) < 2 {
			select {
			case m := <-opened:
				ids[m.Name] = m.RequestID
			case <-time.After(10 * time.Second):
				t.Fatal("timed out waiting for both plans")
			}
		}
		return ids
	}
	ids := waitOpened()

	if _, err := Decide(dir, ids["alice"], protocol.EventApprove, "", ""); err != nil {
		t.Fatal(err)
	}
	s := receive("alice's approval", moved)
	m, err := LoadMember(dir, "alice")
	if err != nil || m.Status != protocol.MemberWorking && m.Status != protocol.MemberIdle {
		t.Fatalf("alice after the approval: %+v (%v)", m, err)
	}
	if len(s.raw) == 0 || s.raw[len(s.raw)-1] != ' ' {
		t.Fatalf("the approval's record %q is not the spare's (padded with spaces)", s.raw)
	}
	if len(s.spare) != 0 {
		t.Fatalf("members/ holds %v of alice's after her approval", s.spare)
	}

	feedback := strings.Repeat("much longer than the spare's slack ", 40)
	if _, err := Decide(dir, ids["bob"], protocol.EventReject, feedback, ""); err != nil {
		t.Fatal(err)
	}
	s = receive("bob's rejection", moved)
	if len(s.raw) == 0 || s.raw[len(s.raw)-1] != '\n' || !bytes.Contains(s.raw, []byte("much longer")) {
		t.Fatalf("bob's rejected record %q is not the ordinary one", s.raw)
	}
	if len(s.spare) != 0 {
		t.Fatalf("members/ holds %v of bob's after his rejection", s.spare)
	}
}

// TestConcurrentResolversLeaveNoTempFile: many resolvers of one request
// at once, each preparing its record while it claims: one wins, the rest
// are told who did, the record is the winner's, and requests/ holds no
// prepared record left behind.
func TestConcurrentResolversLeaveNoTempFile(t *testing.T) {
	dir := t.TempDir()
	r := planRequest("pl-0123456789ab", "reservas", testTime)
	mustCreate(t, dir, r)
	const n = 8
	var wg sync.WaitGroup
	won := make(chan *protocol.Request, n)
	lost := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			ev := protocol.EventApprove
			if i%2 == 1 {
				ev = protocol.EventReject
			}
			got, err := Resolve(dir, r.ID, Resolution{Event: ev, By: "r" + string(rune('0'+i)), Text: "because"})
			if err != nil {
				lost <- err
				return
			}
			won <- got
		})
	}
	wg.Wait()
	close(won)
	close(lost)
	var winners []*protocol.Request
	for w := range won {
		winners = append(winners, w)
	}
	if len(winners) != 1 {
		t.Fatalf("%d resolvers won, want 1", len(winners))
	}
	for err := range lost {
		var already *AlreadyError
		if !errors.As(err, &already) || already.By != winners[0].ResolvedBy {
			t.Fatalf("a losing resolver got %v, want already %s by %s", err, winners[0].Status, winners[0].ResolvedBy)
		}
	}
	onDisk, err := LoadRequest(dir, r.ID)
	if err != nil || !reflect.DeepEqual(onDisk, winners[0]) {
		t.Fatalf("record on disk %+v (%v), want the winner's %+v", onDisk, err, winners[0])
	}
	if got := dotFiles(t, teamdir.RequestsDirPath(dir)); len(got) != 0 {
		t.Fatalf("requests/ holds %v", got)
	}
}
