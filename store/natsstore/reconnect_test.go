package natsstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"huddle/internal/testkit"
	"huddle/protocol"
	"huddle/store"
	"huddle/store/natsserver"
	"huddle/store/natsstore"
	"huddle/store/natsurl"
)

type inbox struct {
	mu  sync.Mutex
	got []string
}

func (b *inbox) handler(_ context.Context, d store.Delivery) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := d.Msg.Content
	if d.Redelivery {
		s += "*"
	}
	b.got = append(b.got, s)
	return nil
}

// consumeFirstThree consumes alice's inbox in s into a new inbox, appends
// n1 to n3 and waits until they are handled. Stop the consumer when done.
func consumeFirstThree(t *testing.T, ctx context.Context, s *natsstore.Store) (*inbox, store.Subscription) {
	t.Helper()
	box := &inbox{}
	sub, err := s.Consume(ctx, "alice", box.handler)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if err := s.Append(ctx, "alice", note(i)); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WaitFor(t, 20*time.Second, "the first three", func() bool { return box.String() == "n1 n2 n3" })
	return box, sub
}

func (b *inbox) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.got, " ")
}

func note(i int) *protocol.Message {
	m := protocol.NewMessage(protocol.TypeMessage, protocol.Lead, "alice")
	m.Content = fmt.Sprintf("n%d", i)
	return &m
}

// restartable is an embedded server a test shuts down and starts again on
// the same address and data directory, as an operator restarting NATS.
type restartable struct {
	srv       *natsserver.Server
	addr, dir string
}

// startRestartable starts one on a free loopback port; it is shut down
// when the test ends.
func startRestartable(t *testing.T) *restartable {
	t.Helper()
	r := &restartable{dir: t.TempDir()}
	srv, err := natsserver.Start(natsserver.Options{Addr: "127.0.0.1:0", DataDir: r.dir})
	if err != nil {
		t.Fatal(err)
	}
	r.srv, r.addr = srv, srv.Addr()
	t.Cleanup(func() { r.srv.Shutdown() })
	return r
}

// restart shuts the server down, waits until s has seen it go, and starts
// it again where it was.
func (r *restartable) restart(t *testing.T, s *natsstore.Store) {
	t.Helper()
	r.stop(t, s)
	r.start(t)
}

// stop shuts the server down and waits until s has seen it go.
func (r *restartable) stop(t *testing.T, s *natsstore.Store) {
	t.Helper()
	r.srv.Shutdown()
	testkit.WaitFor(t, 20*time.Second, "the store to see the server gone", func() bool { return s.Conn().Status() != nats.CONNECTED })
}

// start starts the server again where it was.
func (r *restartable) start(t *testing.T) {
	t.Helper()
	srv, err := natsserver.Start(natsserver.Options{Addr: r.addr, DataDir: r.dir})
	if err != nil {
		t.Fatal(err)
	}
	r.srv = srv
}

// appendRetried appends notes from..to to alice's inbox, each until it is
// stored: appends while the client reconnects may fail, and the same
// message appended again is stored once (its id), so a writer retries.
func appendRetried(t *testing.T, ctx context.Context, s *natsstore.Store, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		m := note(i)
		testkit.WaitFor(t, 20*time.Second, fmt.Sprintf("n%d appended", i), func() bool {
			actx, acancel := context.WithTimeout(ctx, 2*time.Second)
			defer acancel()
			return s.Append(actx, "alice", m) == nil
		})
	}
}

// TestServerRestartedUnderAConnectedStore shuts the server down under a
// store whose consumer runs and starts it again on the same address and
// data directory: the store reconnects with no help, the consumer goes on,
// and nothing written before or during the outage is lost.
func TestServerRestartedUnderAConnectedStore(t *testing.T) {
	srv := startRestartable(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := openURL(t, srv.srv.URL("restart"))
	box, sub := consumeFirstThree(t, ctx, s)
	defer sub.Stop()
	p := protocol.NewRequest(protocol.KindShutdown, "sd-restart", protocol.Lead, "alice", time.Now(), time.Hour)
	if err := s.CreateRequest(ctx, &p); err != nil {
		t.Fatal(err)
	}

	srv.restart(t, s)
	appendRetried(t, ctx, s, 4, 6)
	testkit.WaitFor(t, 20*time.Second, "all six", func() bool { return strings.HasSuffix(box.String(), "n6") })
	// The ack of the message handled as the server went down may not have
	// reached it: that message comes again, marked, right after its first
	// delivery (at least once). Nothing is lost, nothing is out of order,
	// and nothing else comes twice.
	if got := withoutMarkedRepeats(t, box.String()); got != "n1 n2 n3 n4 n5 n6" {
		t.Fatalf("the consumer got %q", box.String())
	}
	r, err := s.Request(ctx, p.ID)
	if err != nil || r.Status != protocol.RequestPending {
		t.Fatalf("the request after the restart: %v %+v", err, r)
	}
	if _, err := s.Decide(ctx, p.ID, store.Decision{Event: protocol.EventApprove, By: "alice"}); err != nil {
		t.Fatal(err)
	}
}

// TestConsumerThatDiedIsRedeliveredMarked: a consumer whose connection
// dies in the middle of a message (a kill -9) never acks it; the server
// hands it to the next consumer after AckWait, marked.
func TestConsumerThatDiedIsRedeliveredMarked(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := server.URL(fmt.Sprintf("t%d", teams.Add(1)))
	short := natsstore.Options{AckWait: time.Second}
	a, err := natsstore.Open(ctx, url, short)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Append(ctx, "alice", note(1), note(2)); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	release := make(chan struct{})
	sub, err := a.Consume(ctx, "alice", func(context.Context, store.Delivery) error {
		close(started)
		<-release
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	a.Conn().Close() // the process is gone: no ack, no nak
	close(release)
	sub.Stop()

	b, err := natsstore.Open(ctx, url, short)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	box := &inbox{}
	sub2, err := b.Consume(ctx, "alice", box.handler)
	if err != nil {
		t.Fatal(err)
	}
	defer sub2.Stop()
	testkit.WaitFor(t, 20*time.Second, "n1 and n2", func() bool { return strings.HasSuffix(box.String(), "n2") })
	if got := box.String(); got != "n1* n2" {
		t.Fatalf("after the consumer died: %q", got)
	}
}

// TestPoisonMessageDeadLettered: a message handed out MaxDeliver times
// and never committed (its consumer died on it each time) is dead-lettered
// on its last delivery, and the inbox goes on.
func TestPoisonMessageDeadLettered(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := server.URL(fmt.Sprintf("t%d", teams.Add(1)))
	opts := natsstore.Options{AckWait: time.Second, MaxDeliver: 3}
	s, err := natsstore.Open(ctx, url, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Append(ctx, "alice", note(1), note(2)); err != nil {
		t.Fatal(err)
	}
	// Two consumers die on n1 (stopped in the middle: a nak each time).
	for range 2 {
		in := make(chan struct{})
		sub, err := s.Consume(ctx, "alice", func(ctx context.Context, d store.Delivery) error {
			close(in)
			<-ctx.Done()
			return ctx.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
		<-in
		sub.Stop()
	}
	box := &inbox{}
	sub, err := s.Consume(ctx, "alice", box.handler)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	testkit.WaitFor(t, 20*time.Second, "n2", func() bool { return box.String() == "n2" })
	dls, _, err := s.DeadLetters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(dls) != 1 || !strings.Contains(dls[0].Reason, "handed out 3 times") || !strings.Contains(dls[0].Raw, `"n1"`) {
		t.Fatalf("dead letters: %+v", dls)
	}
}

// TestCredentialsNeverInErrors: a token or password in the URL appears in
// no error, and Redact hides it for printing.
func TestCredentialsNeverInErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, raw := range []string{
		"nats://hunter2@127.0.0.1:1/team",
		"nats://bob:hunter2@127.0.0.1:1/team",
		"tls://hunter2@127.0.0.1:1/team",
		"nats://hunter2@127.0.0.1:1/bad.team",
		"nats://hunter2@127.0.0.1:1/",
		"http://hunter2@127.0.0.1:1/team",
		"nats://bob:hunter2@127.0.0.1:1/team?x=1",
		"nats://bob:hunter2@[::1:1/team",
	} {
		_, err := natsstore.Open(ctx, raw, natsstore.Options{})
		if err == nil {
			t.Fatalf("%s: opened", natsurl.Redact(raw))
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("the secret is in the error: %v", err)
		}
		if r := natsurl.Redact(raw); strings.Contains(r, "hunter2") {
			t.Fatalf("Redact(%q) = %q", raw, r)
		}
	}
	if r := natsurl.Redact("nats://bob:hunter2@host:4222/team"); r != "nats://***@host:4222/team" {
		t.Fatalf("Redact: %q", r)
	}
}

// TestTokenAuth: against a server that wants a token, the right one in the
// URL connects and a wrong one is refused without being repeated.
func TestTokenAuth(t *testing.T) {
	srv := startTokenServer(t, "s3cret-token")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := natsstore.Open(ctx, "nats://wrong-token-value@"+srv+"/team", natsstore.Options{})
	if err == nil || strings.Contains(err.Error(), "wrong-token-value") {
		t.Fatalf("a wrong token: %v", err)
	}
	if !errors.Is(err, nats.ErrAuthorization) && !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Fatalf("a wrong token: %v, want an authorization error", err)
	}
	s, err := natsstore.Open(ctx, "nats://s3cret-token@"+srv+"/team", natsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Append(ctx, "alice", note(1)); err != nil {
		t.Fatal(err)
	}
}

// withoutMarkedRepeats drops each delivery marked "*" that repeats the one
// before it, and fails on a marked delivery that repeats nothing.
func withoutMarkedRepeats(t *testing.T, got string) string {
	t.Helper()
	var out []string
	for _, d := range strings.Fields(got) {
		if m, ok := strings.CutSuffix(d, "*"); ok {
			if len(out) == 0 || out[len(out)-1] != m {
				t.Fatalf("%s came marked but not right after its first delivery: %q", m, got)
			}
			continue
		}
		out = append(out, d)
	}
	return strings.Join(out, " ")
}
