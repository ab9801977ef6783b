package natsstore_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"huddle/internal/testkit"
	"huddle/store"
	"huddle/store/natsserver"
	"huddle/store/natsstore"
)

// roleEnv names the process a test binary re-executed by these tests plays
// (playRole): a broker or a consumer the test kills -9.
const roleEnv = "HUDDLE_NATSSTORE_TEST_ROLE"

// playRole plays role with what its variables say, until its stdin ends
// (the test closes it, or died), and returns the exit code.
func playRole(role string) int {
	var err error
	switch role {
	case "broker":
		err = playBroker(os.Getenv("ROLE_ADDR"), os.Getenv("ROLE_DATA"))
	case "consumer":
		err = playConsumer(os.Getenv("ROLE_URL"), os.Getenv("ROLE_ACK_WAIT"))
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// playBroker runs an embedded server on addr and data, says "listening
// ADDR", and runs until stdin ends.
func playBroker(addr, data string) error {
	srv, err := natsserver.Start(natsserver.Options{Addr: addr, DataDir: data})
	if err != nil {
		return err
	}
	fmt.Printf("listening %s\n", srv.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	srv.Shutdown()
	return nil
}

// playConsumer consumes alice's inbox at url; its handler says "handling
// CONTENT" and never returns: the process dies holding the message.
func playConsumer(url, ackWait string) error {
	wait, err := time.ParseDuration(ackWait)
	if err != nil {
		return err
	}
	ctx := context.Background()
	s, err := natsstore.Open(ctx, url, natsstore.Options{AckWait: wait})
	if err != nil {
		return err
	}
	if _, err := s.Consume(ctx, "alice", func(ctx context.Context, d store.Delivery) error {
		fmt.Printf("handling %s\n", d.Msg.Content)
		<-ctx.Done()
		return ctx.Err()
	}); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}

// child is a re-executed test binary playing a role; its stdout lines
// come on lines. It is killed when the test ends.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	done  chan struct{}
}

func startChild(t *testing.T, role string, env ...string) *child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(append(os.Environ(), roleEnv+"="+role), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, stdin: stdin, lines: make(chan string, 64), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(func() { c.kill9(t) })
	return c
}

// line waits for the child's next line that starts with prefix.
func (c *child) line(t *testing.T, prefix string) string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case l := <-c.lines:
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-c.done:
			t.Fatalf("%v exited before saying %q", c.cmd.Args, prefix)
		case <-deadline:
			t.Fatalf("%v did not say %q within 30s", c.cmd.Args, prefix)
		}
	}
}

// kill9 kills the child with SIGKILL and waits until it is gone.
func (c *child) kill9(t *testing.T) {
	t.Helper()
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
}

// brokerProcess is a NATS server in a process of its own, on one address
// and data directory across its kills and starts.
type brokerProcess struct {
	*child
	addr, data string
}

func startBrokerProcess(t *testing.T) *brokerProcess {
	t.Helper()
	b := &brokerProcess{addr: "127.0.0.1:0", data: t.TempDir()}
	b.start(t)
	return b
}

// start starts the broker where it was (the first time on a free port).
func (b *brokerProcess) start(t *testing.T) {
	t.Helper()
	b.child = startChild(t, "broker", "ROLE_ADDR="+b.addr, "ROLE_DATA="+b.data)
	b.addr = strings.TrimPrefix(b.line(t, "listening "), "listening ")
}

func (b *brokerProcess) url(team string) string { return "nats://" + b.addr + "/" + team }

// deliveries records, by content, whether each delivery was marked a
// redelivery.
type deliveries struct {
	mu   sync.Mutex
	byID map[string][]bool
}

func (b *deliveries) handler(_ context.Context, d store.Delivery) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.byID == nil {
		b.byID = map[string][]bool{}
	}
	b.byID[d.Msg.Content] = append(b.byID[d.Msg.Content], d.Redelivery)
	return nil
}

// has reports whether n1 to nN all came.
func (b *deliveries) has(n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := 1; i <= n; i++ {
		if len(b.byID[fmt.Sprintf("n%d", i)]) == 0 {
			return false
		}
	}
	return true
}

// repeats counts the messages handed out more than once, and lists those
// handed out again unmarked.
func (b *deliveries) repeats() (again int, unmarked []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for content, marks := range b.byID {
		if len(marks) < 2 {
			continue
		}
		again++
		for _, marked := range marks[1:] {
			if !marked {
				unmarked = append(unmarked, content)
				break
			}
		}
	}
	return again, unmarked
}

// TestBrokerKilledUnderTrafficMarksEveryRepeat: the broker, a process of
// its own, is killed -9 while messages flow through alice's consumer, and
// started again on its data. Every message appended comes, and every one
// handed out again is marked a redelivery: the consumer knows what it was
// handed, whatever the broker remembers of the acks it got just before it
// died (it writes a consumer's state at most ten times a second).
func TestBrokerKilledUnderTrafficMarksEveryRepeat(t *testing.T) {
	const total, killAt = 600, 300
	b := startBrokerProcess(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := openURL(t, b.url("traffic"))
	box := &deliveries{}
	sub, err := s.Consume(ctx, "alice", box.handler)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	// The consumer takes each message as it is appended: when the
	// appending stops, the broker dies in the middle of the traffic.
	appendRetried(t, ctx, s, 1, killAt)
	b.kill9(t)
	testkit.WaitFor(t, 20*time.Second, "the store to see the broker gone", func() bool { return s.Conn().Status() != nats.CONNECTED })
	b.start(t)
	appendRetried(t, ctx, s, killAt+1, total)
	testkit.WaitFor(t, 90*time.Second, fmt.Sprintf("all %d messages", total), func() bool { return box.has(total) })
	again, unmarked := box.repeats()
	t.Logf("%d messages, %d handed out again, %d of them unmarked", total, again, len(unmarked))
	if len(unmarked) > 0 {
		t.Fatalf("%d of the %d messages handed out again came unmarked: %v", len(unmarked), again, unmarked)
	}
}

// TestConsumerTakesOverAtOnceWhatAKilledOneHeld: a consumer process is
// killed -9 while its handler holds alice's first message; the next
// consumer of her inbox gets it at once, marked, then the next one, with
// AckWait an hour: it does not wait for the server to give the dead
// consumer's message up.
func TestConsumerTakesOverAtOnceWhatAKilledOneHeld(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := server.URL(fmt.Sprintf("t%d", teams.Add(1)))
	s, err := natsstore.Open(ctx, url, natsstore.Options{AckWait: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Append(ctx, "alice", note(1), note(2)); err != nil {
		t.Fatal(err)
	}
	dead := startChild(t, "consumer", "ROLE_URL="+url, "ROLE_ACK_WAIT=1h")
	dead.line(t, "handling n1")
	dead.kill9(t)

	box := &inbox{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the new consumer got %q", box.String())
		}
	})
	sub, err := s.Consume(ctx, "alice", box.handler)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	testkit.WaitFor(t, 20*time.Second, "n1 and n2 from the new consumer", func() bool { return strings.HasSuffix(box.String(), "n2") })
	if got := box.String(); got != "n1* n2" {
		t.Fatalf("after the consumer was killed: %q, want %q", got, "n1* n2")
	}
}
