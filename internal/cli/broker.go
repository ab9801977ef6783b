package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// BrokerServer is the NATS server huddle broker runs: where it listens,
// and how it stops once what JetStream holds is on disk.
type BrokerServer interface {
	Addr() string
	Shutdown()
}

// StartBroker starts a NATS server with JetStream on addr (HOST:PORT),
// keeping its data in dir, wanting token from every client unless it is
// empty.
type StartBroker func(addr, dir, token string) (BrokerServer, error)

// brokerStart runs the server in this process. huddle leaves it nil: the
// server's packages would load into every command (nats-server's pse
// reads /proc/self/stat once a second from its initialiser), so huddle
// broker hands itself to huddle-broker, the binary that links them and
// sets it (MainBroker).
var brokerStart StartBroker

// brokerBinary is the binary huddle broker hands itself to.
const brokerBinary = "huddle-broker"

// MainBroker is huddle-broker's main: huddle broker with args, its server
// started by start in this process. It returns the exit code.
func MainBroker(args []string, stdout, stderr io.Writer, start StartBroker) int {
	brokerStart = start
	args = append([]string{"broker"}, args...)
	return run(handOver{args: args, stderr: stderr}, args, stdout, stderr)
}

func brokerFlags(fs *flag.FlagSet) runFunc {
	addr := fs.String("addr", "127.0.0.1:4222", "where to listen (HOST:PORT; port 0 picks a free one); without --token-file only a loopback address")
	data := fs.String("data", "", "where JetStream keeps the teams' streams and buckets (default $XDG_DATA_HOME/huddle/broker, else ~/.local/share/huddle/broker)")
	tokenFile := fs.String("token-file", "", "a file whose first line is the token every client must present (nats://TOKEN@HOST:PORT/TEAM)")
	return func(cl *Cmdline) int { return runBroker(cl, *addr, *data, *tokenFile) }
}

func runBroker(cl *Cmdline, addr, data, tokenFile string) int {
	if code, ok := cl.WantArgs(0, 0, ""); !ok {
		return code
	}
	token := ""
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return cl.UsageError("--token-file: %v", err)
		}
		token, _, _ = strings.Cut(string(b), "\n")
		if token = strings.TrimSpace(token); token == "" {
			return cl.UsageError("--token-file %s holds no token", tokenFile)
		}
	} else if !Loopback(addr) {
		return cl.UsageError("without --token-file huddle broker listens only on a loopback address, not %s", addr)
	}
	if data == "" {
		d, err := defaultBrokerData()
		if err != nil {
			return cl.UsageError("--data is needed: %v", err)
		}
		data = d
	}
	if err := os.MkdirAll(data, 0o700); err != nil {
		return cl.Fail(fmt.Errorf("--data: %w", err))
	}
	if brokerStart == nil {
		return execBroker(cl)
	}
	ctx, stop := SignalContext()
	defer stop()
	srv, err := brokerStart(addr, data, token)
	if err != nil {
		return cl.Fail(err)
	}
	url := "nats://" + srv.Addr() + "/TEAM"
	if token != "" {
		url = "nats://TOKEN@" + srv.Addr() + "/TEAM"
	}
	fmt.Fprintf(cl.Stdout, "NATS with JetStream on %s, data in %s\n", srv.Addr(), data)
	fmt.Fprintf(cl.Stdout, "store URL: %s (TEAM is the team's name)\n", url)
	<-ctx.Done()
	srv.Shutdown()
	fmt.Fprintln(cl.Stdout, "stopped")
	return ExitOK
}

// execBroker replaces this process with huddle-broker, given the flags cl
// was given: found beside this executable, else on PATH. It returns only
// when that fails.
func execBroker(cl *Cmdline) int {
	bin, err := findBroker()
	if err != nil {
		return cl.Fail(err)
	}
	argv := []string{bin}
	cl.fs.Visit(func(f *flag.Flag) { argv = append(argv, "--"+f.Name+"="+f.Value.String()) })
	err = syscall.Exec(bin, argv, os.Environ())
	return cl.Fail(fmt.Errorf("run %s: %w", bin, err))
}

// findBroker is huddle-broker beside this executable, else on PATH.
func findBroker() (string, error) {
	beside, dir := besideExecutable(brokerBinary)
	if beside != "" {
		return beside, nil
	}
	if p, err := exec.LookPath(brokerBinary); err == nil {
		return p, nil
	}
	where := "beside huddle"
	if dir != "" {
		where += " (" + dir + ")"
	}
	return "", fmt.Errorf("%s, the binary that holds the NATS server, is neither %s nor on PATH: build it in huddle's source with 'go install ./cmd/%s'", brokerBinary, where, brokerBinary)
}

// defaultBrokerData is $XDG_DATA_HOME/huddle/broker, else
// ~/.local/share/huddle/broker.
func defaultBrokerData() (string, error) {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "huddle", "broker"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	if home == "" {
		return "", errors.New("no home directory")
	}
	return filepath.Join(home, ".local", "share", "huddle", "broker"), nil
}

// Loopback reports whether addr (host:port) is a loopback address.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
