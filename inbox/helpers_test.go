package inbox

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"huddle/protocol"
	"huddle/teamdir"
)

// The test binary re-executes itself as writer and consumer processes.
const roleEnv = "HUDDLE_INBOX_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "writer":
		os.Exit(runWriter())
	case "consumer":
		os.Exit(runConsumer())
	}
	os.Exit(m.Run())
}

// runWriter appends N messages from writer W to the lead's inbox.
func runWriter() int {
	dir, name := os.Getenv("DIR"), os.Getenv("WRITER")
	n, _ := strconv.Atoi(os.Getenv("N"))
	for i := range n {
		m := protocol.NewMessage(protocol.TypeMessage, name, protocol.Lead)
		m.Content = fmt.Sprintf("%s:%d", name, i)
		if err := Append(dir, protocol.Lead, &m); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// runConsumer consumes the lead's inbox, logging "id redelivery content" for
// each delivery before the handler returns, until SIGTERM (clean) or SIGKILL.
func runConsumer() int {
	dir, logPath := os.Getenv("DIR"), os.Getenv("LOG")
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	w, err := NewWatcher(ctx, dir, Options{Rescan: 50 * time.Millisecond, CompactAt: 64 << 10})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	err = w.Consume(protocol.Lead, func(_ context.Context, d Delivery) error {
		r := 0
		if d.Redelivery {
			r = 1
		}
		_, err := fmt.Fprintf(log, "%s %d %s\n", d.Msg.ID, r, d.Msg.Content)
		return err
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	<-ctx.Done()
	if err := w.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

type logEntry struct {
	id         string
	redelivery bool
	content    string
}

func readLog(t testing.TB, path string) []logEntry {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []logEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), " ", 3)
		if len(parts) != 3 {
			continue // a torn last line from a kill mid-write
		}
		out = append(out, logEntry{parts[0], parts[1] == "1", parts[2]})
	}
	return out
}

func msg(from, to, content string) *protocol.Message {
	m := protocol.NewMessage(protocol.TypeMessage, from, to)
	m.Content = content
	return &m
}

// cursorPath and prevPath are the companions of a valid member's inbox.
func cursorPath(team, member string) string {
	p, err := teamdir.CursorPath(team, member)
	if err != nil {
		panic(err)
	}
	return p
}

func prevPath(team, member string) string {
	p, err := teamdir.PrevPath(team, member)
	if err != nil {
		panic(err)
	}
	return p
}
