package cli

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
	"huddle/teamdir"
)

// TestLogsFromAnotherProcess: on both kinds of store, a `huddle up`
// process runs talker, an exec member that writes a line on stderr for
// each message; `huddle logs`, another process (on NATS one with no
// directory of the team), prints what it wrote, and `huddle logs -f`
// prints the lines written after it started, as they come.
func TestLogsFromAnotherProcess(t *testing.T) {
	b, _ := json.Marshal(team.Team{Name: "logs", Members: []team.MemberSpec{
		{Name: "talker", Role: "talks", Runtime: team.RuntimeSpec{Kind: team.RuntimeExec, Command: []string{"sh", "-c", `echo "talker up" >&2; while read -r l; do echo "heard $l" >&2; done`}}},
		{Name: "idler", Role: "waits", Runtime: team.RuntimeSpec{Kind: team.RuntimeScript, Steps: []team.Step{{Wait: team.Duration(time.Hour)}}}},
	}})
	onEachStore(t, map[string]string{store.ConfigTeam: string(b)}, func(t *testing.T, tm *teamOn) {
		logs := func(args ...string) cliResult { return tm.huddle(t, append([]string{"logs"}, args...)...) }
		// Where the log is not yet: the file it would be, or the store.
		notYet := func(member string) string {
			if tm.dir == "" {
				return " in the store yet"
			}
			p, _ := teamdir.MemberLogPath(tm.dir, member)
			return " yet: " + p
		}
		logs("talker").wantError(t, ExitFail, "talker has no log (an exec member's stderr)"+notYet("talker"), "logs before any runtime")
		logs("nobody").wantError(t, ExitFail, `no member "nobody" in team logs`, "logs nobody")
		logs("../x").wantError(t, ExitUsage, "invalid name", "logs ../x")
		logs("talker", "--json").wantError(t, ExitUsage, "--json goes with --transcript", "logs --json")

		tm.up(t, "lead,talker,idler")
		memberOn(t, tm.st, "talker", "talker working", statusIs(protocol.MemberWorking))
		testkit.WaitFor(t, 30*time.Second, "talker's first line", func() bool {
			return logs("talker").stdout == "talker up\n"
		})

		// -f, in a process of its own, until SIGINT.
		cmd := exec.Command(huddleBinary(t), slices.Concat([]string{"logs", "talker", "-f"}, tm.args)...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		var mu sync.Mutex
		var followed []string
		read := make(chan struct{})
		go func() {
			defer close(read)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				mu.Lock()
				followed = append(followed, sc.Text())
				mu.Unlock()
			}
		}()
		has := func(want string) func() bool {
			return func() bool {
				mu.Lock()
				defer mu.Unlock()
				for _, l := range followed {
					if strings.Contains(l, want) {
						return true
					}
				}
				return false
			}
		}
		testkit.WaitFor(t, 30*time.Second, "-f to print what the log held", has("talker up"))
		tm.must(t, "send", "talker", "first words")
		testkit.WaitFor(t, 30*time.Second, "-f to print the line written after it started", has("first words"))
		tm.must(t, "send", "talker", "second words")
		testkit.WaitFor(t, 30*time.Second, "-f to print the next line", has("second words"))
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		<-read
		if err := cmd.Wait(); err != nil {
			t.Fatalf("logs -f after SIGINT: %v", err)
		}
		mu.Lock()
		got := followed
		mu.Unlock()
		if len(got) != 3 || got[0] != "talker up" || !strings.HasPrefix(got[1], "heard ") || !strings.Contains(got[1], "first words") || !strings.Contains(got[2], "second words") {
			t.Fatalf("logs -f printed %q", got)
		}
		// The whole log, read again, is what -f printed.
		if all := logs("talker").stdout; all != strings.Join(got, "\n")+"\n" {
			t.Fatalf("logs printed %q, -f %q", all, got)
		}
		logs("idler").wantError(t, ExitFail, "idler is a script member: it writes no log", "logs of a scripted member")
		logs("idler", "--transcript").wantError(t, ExitFail, "idler is a script member: only an llm member has a transcript", "the transcript of a scripted member")
	})
}
