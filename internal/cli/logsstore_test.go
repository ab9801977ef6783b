package cli

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
)

// TestLogsOnStoreFromAnotherProcess: a `huddle up --store` process runs
// talker, an exec member that writes a line on stderr for each message;
// `huddle logs --store`, another process with no directory of the team,
// prints what it wrote, and `huddle logs --store -f` prints the lines
// written after it started, as they come.
func TestLogsOnStoreFromAnotherProcess(t *testing.T) {
	url := natsTeam(t)
	st := openTeamStore(t, url, false)
	b, _ := json.Marshal(team.Team{Name: "logs", Members: []team.MemberSpec{
		{Name: "talker", Role: "talks", Runtime: team.RuntimeSpec{Kind: team.RuntimeExec, Command: []string{"sh", "-c", `echo "talker up" >&2; while read -r l; do echo "heard $l" >&2; done`}}},
		{Name: "idler", Role: "waits", Runtime: team.RuntimeSpec{Kind: team.RuntimeScript, Steps: []team.Step{{Wait: team.Duration(time.Hour)}}}},
	}})
	putConfigs(t, st, map[string]string{store.ConfigTeam: string(b)})
	huddle(t, "logs", "talker", "--store", url).wantError(t, exitFail, "talker has no log (an exec member's stderr) in the store yet", "logs before any runtime")
	huddle(t, "logs", "nobody", "--store", url).wantError(t, exitFail, `no member "nobody" in team logs`, "logs nobody")
	huddle(t, "logs", "../x", "--store", url).wantError(t, exitUsage, "invalid name", "logs ../x")
	huddle(t, "logs", "talker", "--json", "--store", url).wantError(t, exitUsage, "--json goes with --transcript", "logs --json")

	startUpOnWhenFree(t, url, "lead,talker,idler")
	memberOn(t, st, "talker", "talker working", statusIs(protocol.MemberWorking))
	testkit.WaitFor(t, 30*time.Second, "talker's first line in the store", func() bool {
		return huddle(t, "logs", "talker", "--store", url).stdout == "talker up\n"
	})

	// -f, in a process of its own, until SIGINT.
	cmd := exec.Command(huddleBinary(t), "logs", "talker", "-f", "--store", url)
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
	testkit.WaitFor(t, 30*time.Second, "-f to print what the store held", has("talker up"))
	mustHuddle(t, "send", "talker", "first words", "--store", url)
	testkit.WaitFor(t, 30*time.Second, "-f to print the line written after it started", has("first words"))
	mustHuddle(t, "send", "talker", "second words", "--store", url)
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
	if all := mustHuddle(t, "logs", "talker", "--store", url).stdout; all != strings.Join(got, "\n")+"\n" {
		t.Fatalf("logs printed %q, -f %q", all, got)
	}
	huddle(t, "logs", "idler", "--store", url).wantError(t, exitFail, "idler has no log (an exec member's stderr) in the store yet", "logs of a scripted member")
}
