package cli

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/protocol"
	"huddle/store"
	"huddle/store/natsstore"
)

var brokerURL = regexp.MustCompile(`store URL: (nats://\S+)/TEAM`)

// startBroker runs `huddle broker` and returns its process, the URL prefix
// it printed and its stdout reader.
func startBroker(t *testing.T, args ...string) (*exec.Cmd, string, *bufio.Reader, *testkit.Buffer) {
	t.Helper()
	cmd := exec.Command(huddleBinary(t), append([]string{"broker"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &testkit.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	r := bufio.NewReader(out)
	var prefix string
	for prefix == "" {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("huddle broker: %v (stderr %s)", err, stderr.String())
		}
		if m := brokerURL.FindStringSubmatch(line); m != nil {
			prefix = m[1]
		}
	}
	return cmd, prefix, r, stderr
}

// TestBrokerRunsAndStopsCleanly runs `huddle broker` on a free port, keeps
// a team in it through the NATS store, stops it with SIGINT, and finds
// what was written there when a second broker starts on the same data.
func TestBrokerRunsAndStopsCleanly(t *testing.T) {
	data := t.TempDir()
	cmd, prefix, out, stderr := startBroker(t, "--addr", "127.0.0.1:0", "--data", data)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := natsstore.Open(ctx, prefix+"/demo", natsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutConfig(ctx, store.ConfigTeam, []byte(`{"name":"demo"}`)); err != nil {
		t.Fatal(err)
	}
	m := protocol.NewMessage(protocol.TypeMessage, protocol.Lead, "alice")
	m.Content = "hello"
	if err := s.Append(ctx, "alice", &m); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	rest, _ := out.ReadString(0)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("huddle broker after SIGINT: %v (stderr %q)", err, stderr.String())
	}
	if !strings.Contains(rest, "stopped") || stderr.String() != "" {
		t.Fatalf("after SIGINT: stdout %q, stderr %q", rest, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(data, "jetstream")); err != nil {
		t.Fatalf("no JetStream data in --data: %v", err)
	}

	_, prefix2, _, _ := startBroker(t, "--addr", "127.0.0.1:0", "--data", data)
	s2, err := natsstore.Open(ctx, prefix2+"/demo", natsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if b, err := s2.Config(ctx, store.ConfigTeam); err != nil || string(b) != `{"name":"demo"}` {
		t.Fatalf("team.json after the broker restarted: %v %q", err, b)
	}
	got := make(chan string, 1)
	sub, err := s2.Consume(ctx, "alice", func(_ context.Context, d store.Delivery) error {
		got <- d.Msg.Content
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	select {
	case c := <-got:
		if c != "hello" {
			t.Fatalf("alice got %q", c)
		}
	case <-ctx.Done():
		t.Fatal("alice's message did not survive the broker's restart")
	}
}

// TestBrokerRefusesABusyPort: a port already taken is one error line and
// Exit 1.
func TestBrokerRefusesABusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r := huddle(t, "broker", "--addr", ln.Addr().String(), "--data", t.TempDir())
	if r.code != ExitFail || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "huddle: broker: ") || !strings.Contains(r.stderr, "in use") {
		t.Fatalf("busy port: code %d, stderr %q", r.code, r.stderr)
	}
}

// TestBrokerRefusesAnOpenAddressWithoutToken: with no token, only loopback.
func TestBrokerRefusesAnOpenAddressWithoutToken(t *testing.T) {
	r := huddle(t, "broker", "--addr", "0.0.0.0:0", "--data", t.TempDir())
	if r.code != ExitUsage || !strings.Contains(r.stderr, "only on a loopback address") {
		t.Fatalf("0.0.0.0 without a token: code %d, stderr %q", r.code, r.stderr)
	}
}

// TestBrokerToken: with --token-file every client needs the token, and the
// printed URL does not show it.
func TestBrokerToken(t *testing.T) {
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("t0ken-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(huddleBinary(t), "broker", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--token-file", tok)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	r := bufio.NewReader(out)
	var addr string
	for addr == "" {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, "t0ken-value") {
			t.Fatalf("the token is printed: %q", line)
		}
		if m := regexp.MustCompile(`nats://TOKEN@(\S+)/TEAM`).FindStringSubmatch(line); m != nil {
			addr = m[1]
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := natsstore.Open(ctx, "nats://"+addr+"/demo", natsstore.Options{}); err == nil {
		t.Fatal("connected without the token")
	}
	s, err := natsstore.Open(ctx, "nats://t0ken-value@"+addr+"/demo", natsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}

// TestBrokerHelp: --help says what the command table says.
func TestBrokerHelp(t *testing.T) {
	r := huddle(t, "broker", "--help")
	if r.code != ExitOK || !strings.Contains(r.stdout, "huddle broker [--addr 127.0.0.1:4222] [--data DIR] [--token-file F]") || !strings.Contains(r.stdout, "--token-file") || !strings.Contains(r.stdout, "nats://HOST:PORT/TEAM") {
		t.Fatalf("broker --help: code %d\n%s", r.code, r.stdout)
	}
}

// TestBrokerFindsItsBinary: huddle broker runs huddle-broker, which holds
// the NATS server huddle does not link: beside huddle, else on PATH, and
// without it one line says how to build it.
func TestBrokerFindsItsBinary(t *testing.T) {
	built := filepath.Dir(huddleBinary(t))
	alone := aloneHuddle(t, false)
	run := func(path string, args ...string) (string, string, int) {
		return runBinary(t, alone, "", []string{"PATH=" + path}, args...)
	}

	_, stderr, code := run(t.TempDir(), "broker", "--addr", "127.0.0.1:0", "--data", t.TempDir())
	if code != ExitFail || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "huddle-broker") || !strings.Contains(stderr, "go install ./cmd/huddle-broker") {
		t.Fatalf("no huddle-broker anywhere: code %d, stderr %q", code, stderr)
	}
	// Bad input is refused before huddle-broker is looked for.
	_, stderr, code = run(t.TempDir(), "broker", "--addr", "0.0.0.0:0", "--data", t.TempDir())
	if code != ExitUsage || !strings.Contains(stderr, "only on a loopback address") {
		t.Fatalf("0.0.0.0 without a token nor huddle-broker: code %d, stderr %q", code, stderr)
	}

	// On PATH, it runs there; a busy port is its one line, through huddle.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, stderr, code = run(built, "broker", "--addr", ln.Addr().String(), "--data", t.TempDir())
	if code != ExitFail || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "in use") {
		t.Fatalf("huddle-broker on PATH, busy port: code %d, stderr %q", code, stderr)
	}
	stdout, _, code := run(built, "broker", "--help")
	if code != ExitOK || !strings.Contains(stdout, "huddle broker [--addr") {
		t.Fatalf("broker --help without huddle-broker beside: code %d\n%s", code, stdout)
	}
}
