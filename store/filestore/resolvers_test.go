package filestore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/protocol"
	"huddle/store"
	"huddle/teamdir"
)

// roleEnv names the role the test binary plays when a test re-executes it.
const roleEnv = "HUDDLE_FILESTORE_TEST_ROLE"

func TestMain(m *testing.M) {
	switch role := os.Getenv(roleEnv); role {
	case "":
		os.Exit(m.Run())
	case "resolver":
		os.Exit(runResolver())
	default:
		fmt.Fprintf(os.Stderr, "unknown test role %q\n", role)
		os.Exit(2)
	}
}

// runResolver reads request ids from stdin, one a line, and races to
// decide each in the team directory $DIR, on one store for the process's
// life, as $ME with $EVENT. For each it prints one line: "won <status>", or
// "lost <status> <by> <error text>", or "err <error text>".
func runResolver() int {
	dir, me := os.Getenv("DIR"), os.Getenv("ME")
	ev := protocol.RequestEvent(os.Getenv("EVENT"))
	s, err := Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		r, err := s.Decide(context.Background(), in.Text(), store.Decision{Event: ev, By: me, Text: "from " + me})
		var already *store.AlreadyError
		switch {
		case err == nil:
			fmt.Printf("won %s\n", r.Status)
		case errors.As(err, &already):
			fmt.Printf("lost %s %s %s\n", already.Status, already.By, err)
		default:
			fmt.Printf("err %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		}
	}
	return 0
}

// TestDecideRaceAcrossProcesses runs two processes that decide the same
// pending request at the same moment, round after round: exactly one wins,
// the other is told who did, and the record says what the winner decided.
func TestDecideRaceAcrossProcesses(t *testing.T) {
	const rounds = 50
	dir, s := openDir(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	type proc struct {
		name  string
		ev    protocol.RequestEvent
		stdin io.WriteCloser
		lines chan string
		wins  int
	}
	procs := []*proc{{name: "p0", ev: protocol.EventApprove}, {name: "p1", ev: protocol.EventReject}}
	for _, p := range procs {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), roleEnv+"=resolver", "DIR="+dir, "ME="+p.name, "EVENT="+string(p.ev))
		cmd.Stderr = os.Stderr
		if p.stdin, err = cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p.lines = make(chan string)
		go func() { // owner: this test; ends with the resolver's stdout
			defer close(p.lines)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				p.lines <- sc.Text()
			}
		}()
		t.Cleanup(func() {
			p.stdin.Close() // the resolver exits at EOF
			for range p.lines {
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("%s: %v", p.name, err)
			}
		})
	}
	next := func(p *proc) string {
		t.Helper()
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("%s exited early", p.name)
			}
			return l
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not answer within 10s", p.name)
		}
		return ""
	}

	for i := range rounds {
		r := planRequest(protocol.NewRequestID(protocol.KindPlan), "reservas", testTime.Add(time.Duration(i)*time.Second))
		mustCreate(t, s, r)
		for _, p := range procs {
			if _, err := fmt.Fprintln(p.stdin, r.ID); err != nil {
				t.Fatal(err)
			}
		}
		var winner *proc
		lost := map[*proc]string{}
		for _, p := range procs {
			l := next(p)
			switch {
			case strings.HasPrefix(l, "won "):
				if winner != nil {
					t.Fatalf("round %d: both %s and %s won", i, winner.name, p.name)
				}
				winner = p
			case strings.HasPrefix(l, "lost "):
				lost[p] = l
			default:
				t.Fatalf("round %d: %s: %s", i, p.name, l)
			}
		}
		if winner == nil {
			t.Fatalf("round %d: nobody won: %v", i, lost)
		}
		winner.wins++
		want, _ := protocol.RequestPending.Next(r.Kind, winner.ev)
		for p, l := range lost {
			wantLine := fmt.Sprintf("lost %s %s request %s already %s by %s", want, winner.name, r.ID, want, winner.name)
			if l != wantLine {
				t.Fatalf("round %d: %s said %q, want %q", i, p.name, l, wantLine)
			}
		}
		got, err := s.Request(t.Context(), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != want || got.ResolvedBy != winner.name || got.Feedback != "from "+winner.name || len(got.History) != 2 {
			t.Fatalf("round %d: record %+v, want %s by %s", i, got, want, winner.name)
		}
	}
	t.Logf("wins: %s %d, %s %d", procs[0].name, procs[0].wins, procs[1].name, procs[1].wins)
}

// TestConcurrentResolversLeaveNoTempFile: many resolvers of one request
// at once on one store: the record on disk is the one the winner got, and
// requests/ holds no temp file left behind by the losers' claims. (That one
// wins and the rest are told who is the contract's RacingApproversOneWinner.)
func TestConcurrentResolversLeaveNoTempFile(t *testing.T) {
	dir, s := openDir(t)
	ctx := t.Context()
	r := planRequest("pl-0123456789ab", "reservas", testTime)
	mustCreate(t, s, r)
	const n = 8
	var wg sync.WaitGroup
	won := make(chan *protocol.Request, n)
	for i := range n {
		wg.Go(func() {
			ev := protocol.EventApprove
			if i%2 == 1 {
				ev = protocol.EventReject
			}
			if got, err := s.Decide(ctx, r.ID, store.Decision{Event: ev, By: fmt.Sprintf("r%d", i), Text: "because"}); err == nil {
				won <- got
			}
		})
	}
	wg.Wait()
	close(won)
	var winners []*protocol.Request
	for w := range won {
		winners = append(winners, w)
	}
	if len(winners) != 1 {
		t.Fatalf("%d resolvers won, want 1", len(winners))
	}
	if onDisk := recordOnDisk(t, dir, r.ID); !reflect.DeepEqual(onDisk, winners[0]) {
		t.Fatalf("record on disk %+v, want the winner's %+v", onDisk, winners[0])
	}
	ents, err := os.ReadDir(teamdir.RequestsDirPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("requests/ holds %s", e.Name())
		}
	}
}
