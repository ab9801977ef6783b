package cli

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"huddle/store/natsstore"
)

func brokerFlags(fs *flag.FlagSet) runFunc {
	addr := fs.String("addr", "127.0.0.1:4222", "where to listen (HOST:PORT; port 0 picks a free one); without --token-file only a loopback address")
	data := fs.String("data", "", "where JetStream keeps the teams' streams and buckets (default $XDG_DATA_HOME/huddle/broker, else ~/.local/share/huddle/broker)")
	tokenFile := fs.String("token-file", "", "a file whose first line is the token every client must present (nats://TOKEN@HOST:PORT/TEAM)")
	return func(cl *cmdline) int { return runBroker(cl, *addr, *data, *tokenFile) }
}

func runBroker(cl *cmdline, addr, data, tokenFile string) int {
	if code, ok := cl.wantArgs(0, 0, ""); !ok {
		return code
	}
	token := ""
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return cl.usageError("--token-file: %v", err)
		}
		token, _, _ = strings.Cut(string(b), "\n")
		if token = strings.TrimSpace(token); token == "" {
			return cl.usageError("--token-file %s holds no token", tokenFile)
		}
	} else if !loopback(addr) {
		return cl.usageError("without --token-file huddle broker listens only on a loopback address, not %s", addr)
	}
	if data == "" {
		d, err := defaultBrokerData()
		if err != nil {
			return cl.usageError("--data is needed: %v", err)
		}
		data = d
	}
	if err := os.MkdirAll(data, 0o700); err != nil {
		return cl.fail(fmt.Errorf("--data: %w", err))
	}
	ctx, stop := signalContext()
	defer stop()
	srv, err := natsstore.StartServer(natsstore.ServerOptions{Addr: addr, DataDir: data, Token: token})
	if err != nil {
		return cl.fail(err)
	}
	url := srv.URL("TEAM")
	if token != "" {
		url = "nats://TOKEN@" + srv.Addr() + "/TEAM"
	}
	fmt.Fprintf(cl.stdout, "NATS with JetStream on %s, data in %s\n", srv.Addr(), data)
	fmt.Fprintf(cl.stdout, "store URL: %s (TEAM is the team's name)\n", url)
	<-ctx.Done()
	srv.Shutdown()
	fmt.Fprintln(cl.stdout, "stopped")
	return exitOK
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
