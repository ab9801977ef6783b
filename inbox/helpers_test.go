package inbox

import (
	"bufio"
	"context"
	"fmt"
	"io"
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
	case "foreign":
		os.Exit(runForeign())
	case benchWriterRole:
		os.Exit(runBenchWriter())
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

// crashExit is the exit code of a consumer process that died on purpose
// inside a compaction or a journal's move (CRASH_AT names the step).
const crashExit = 3

// runConsumer consumes the lead's inbox, logging "id redelivery content" for
// each delivery before the handler returns, until SIGTERM (clean) or SIGKILL;
// with READY it creates that file once SIGTERM stops it cleanly.
// With CRASH_AT it exits at that step of its first compaction or of its
// journal's move; with WARNLOG
// it writes each warning there.
func runConsumer() int {
	dir, logPath := os.Getenv("DIR"), os.Getenv("LOG")
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if at := os.Getenv("CRASH_AT"); at != "" {
		stepHook = func(step string) {
			if step == at {
				os.Exit(crashExit)
			}
		}
	}
	// No periodic rescan, as in production: events alone must do.
	opts := Options{CompactAt: 64 << 10}
	if p := os.Getenv("WARNLOG"); p != "" {
		opts.Warn = func(member string, err error) {
			_ = teamdir.AppendLine(p, []byte(member+": "+strings.ReplaceAll(err.Error(), "\n", " ")+"\n"))
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	w, err := NewWatcher(ctx, dir, opts)
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
	if p := os.Getenv("READY"); p != "" {
		// SIGTERM is handled from here on: before, it would kill the process.
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	<-ctx.Done()
	if err := w.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// runForeign drains the lead's inbox the way learn-claude-code's bus does:
// it reads the whole file and truncates it (under the inbox's flock when
// LOCK=1, without it otherwise), then appends N lines of its own dialect,
// "burst<ROUND>:<i>", one write each and without a lock.
func runForeign() int {
	dir, round := os.Getenv("DIR"), os.Getenv("ROUND")
	n, _ := strconv.Atoi(os.Getenv("N"))
	p, err := teamdir.InboxPath(dir, protocol.Lead)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := drainLikeABus(p, os.Getenv("LOCK") == "1"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer f.Close()
	for i := range n {
		line := fmt.Sprintf(`{"type":"message","from":"foreign","content":"burst%s:%d","timestamp":%d.5}`+"\n", round, i, time.Now().Unix())
		if _, err := f.WriteString(line); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// drainLikeABus reads the inbox at p whole and truncates it to nothing.
func drainLikeABus(p string, lock bool) error {
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if lock {
		if err := teamdir.LockExclusive(f); err != nil {
			return err
		}
		defer teamdir.Unlock(f)
	}
	if _, err := io.ReadAll(f); err != nil {
		return err
	}
	return f.Truncate(0)
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
