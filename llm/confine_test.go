package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	secretset "huddle/internal/redact"
	"huddle/internal/sandbox"
	"huddle/internal/testkit"
)

// TestSymlinkFlippedFromOutsideNeverEscapes races write_file and read_file
// against a process outside the tools that swaps the member's sub/, a real
// directory, with a symlink to a directory outside (renameat2
// RENAME_EXCHANGE, atomically), thousands of times: no write lands outside
// and no read returns the outside file, whatever the interleaving.
func TestSymlinkFlippedFromOutsideNeverEscapes(t *testing.T) {
	const tries = 4000
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("OUTSIDE-SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := newToolAgent(t, nil)
	sub, swap := filepath.Join(a.dir, "sub"), filepath.Join(a.dir, "swap")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "secret"), []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, swap); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var flipper sync.WaitGroup
	flipper.Add(1)
	go func() {
		defer flipper.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := unix.Renameat2(unix.AT_FDCWD, sub, unix.AT_FDCWD, swap, unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("flip: %v", err)
				return
			}
		}
	}()
	ctx := context.Background()
	var wrote, read int
	for i := range tries {
		args, _ := json.Marshal(map[string]string{"path": "sub/f", "content": "payload"})
		a.runTool(ctx, call("w", "write_file", string(args)))
		if _, err := os.Lstat(filepath.Join(outside, "f")); err == nil {
			wrote++
			_ = os.Remove(filepath.Join(outside, "f"))
		}
		text, _, _ := a.runTool(ctx, call("r", "read_file", `{"path":"sub/secret"}`))
		if strings.Contains(text, "OUTSIDE-SECRET") {
			read++
		}
		if i%500 == 0 && t.Failed() {
			break
		}
	}
	close(stop)
	flipper.Wait()
	t.Logf("%d tries: %d writes and %d reads escaped", tries, wrote, read)
	if wrote > 0 || read > 0 {
		t.Errorf("a symlink flipped from outside let %d of %d writes and %d of %d reads escape the member's directory", wrote, tries, read, tries)
	}
}

// kernels are the two ways bash is confined on a kernel with Landlock:
// in new PID and mount namespaces (a fresh /proc), and without them (no
// /proc at all, orphans killed by the subreaper), as where the kernel
// refuses a user namespaces.
func kernels(t *testing.T) map[string]func() sandbox.Kernel {
	t.Helper()
	k := sandbox.Probe()
	if k.Landlock < 1 {
		t.Skip("this kernel offers no Landlock: bash is refused (TestBashRefusedWithoutLandlock)")
	}
	return map[string]func() sandbox.Kernel{
		"namespaces":    func() sandbox.Kernel { return k },
		"no-namespaces": func() sandbox.Kernel { return sandbox.Kernel{Landlock: k.Landlock} },
	}
}

// runBash runs command through the bash tool.
func runBash(t *testing.T, a *Agent, command string) (string, bool) {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"command": command})
	text, isErr, _ := a.runTool(context.Background(), call("b", "bash", string(args)))
	return text, isErr
}

// TestBashWritesOnlyUnderItsDir: bash writes in the member's directory and
// nowhere else, not in a directory of the same user nor in /tmp; it reads
// the system's read-only paths (/etc/passwd among them, a decision:
// docs/ARCHITECTURE.md, "Trust").
func TestBashWritesOnlyUnderItsDir(t *testing.T) {
	for name, kernel := range kernels(t) {
		t.Run(name, func(t *testing.T) {
			outside := t.TempDir()
			keep := filepath.Join(outside, "keep")
			if err := os.WriteFile(keep, []byte("keep"), 0o644); err != nil {
				t.Fatal(err)
			}
			tmp := filepath.Join(os.TempDir(), fmt.Sprintf("huddle-escape-%d", time.Now().UnixNano()))
			t.Cleanup(func() { os.Remove(tmp) })
			a := newToolAgent(t, func(c *Config) { c.Kernel = kernel })
			text, _ := runBash(t, a, fmt.Sprintf(`echo in > inside.txt; mkdir -p sub && echo in > sub/f; `+
				`echo out > %[1]s/escaped.txt; rm -f %[1]s/keep; mkdir %[1]s/d; echo out > %[2]s; `+
				`echo t > "$TMPDIR/t" && echo tmp ok; cd / && head -2 /etc/passwd`, outside, tmp))
			t.Logf("bash said: %s", text)
			if b, err := os.ReadFile(filepath.Join(a.dir, "sub", "f")); err != nil || string(b) != "in\n" {
				t.Errorf("a write inside: %q, %v", b, err)
			}
			if got := testkit.Tree(t, outside); len(got) != 2 || got["keep"] != 4 {
				t.Errorf("bash changed a directory outside its own: %v", got)
			}
			if _, err := os.Stat(tmp); err == nil {
				t.Errorf("bash wrote %s", tmp)
			}
			if !strings.Contains(text, "tmp ok") {
				t.Errorf("bash could not write its TMPDIR: %q", text)
			}
			if !strings.Contains(text, "root:") {
				t.Errorf("bash could not read /etc/passwd, a system path: %q", text)
			}
		})
	}
}

// TestBashSeesNoOtherProcessEnviron: another process's environment, the
// variable it was started with, is not readable from bash, by its pid
// or by any pid.
func TestBashSeesNoOtherProcessEnviron(t *testing.T) {
	const secret = "other-process-SECRET-4242"
	other := exec.Command("sleep", "1000")
	other.Env = []string{"HUDDLE_OTHER_SECRET=" + secret}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	for name, kernel := range kernels(t) {
		t.Run(name, func(t *testing.T) {
			a := newToolAgent(t, func(c *Config) { c.Kernel = kernel })
			text, _ := runBash(t, a, fmt.Sprintf(`cat /proc/%d/environ; cat /proc/$PPID/environ; `+
				`for f in /proc/[0-9]*/environ; do cat "$f"; done; echo; echo listed`, other.Process.Pid))
			if strings.Contains(text, secret) {
				t.Errorf("bash read another process's environment: %q", text)
			}
			if !strings.Contains(text, "listed") {
				t.Errorf("the command did not run to its end: %q", text)
			}
		})
	}
}

// TestBashLeavesNoProcessBehind: what bash started in the background,
// nohup'd, setsid'd or double-forked, is gone when the call returns.
func TestBashLeavesNoProcessBehind(t *testing.T) {
	for name, kernel := range kernels(t) {
		t.Run(name, func(t *testing.T) {
			// sleep's argument marks its processes: unique to this run.
			n := time.Now().UnixNano() % 1e6
			marks := []string{fmt.Sprintf("%d.1", 500000+n), fmt.Sprintf("%d.2", 500000+n), fmt.Sprintf("%d.3", 500000+n)}
			t.Cleanup(func() { killMarked(marks) })
			a := newToolAgent(t, func(c *Config) { c.Kernel = kernel })
			text, isErr := runBash(t, a, fmt.Sprintf(`nohup sleep %s >/dev/null 2>&1 & setsid sleep %s >/dev/null 2>&1 & (sleep %s >/dev/null 2>&1 &); echo started`, marks[0], marks[1], marks[2]))
			if isErr || !strings.Contains(text, "started") {
				t.Fatalf("bash = %q", text)
			}
			if left := marked(marks); len(left) > 0 {
				t.Errorf("processes outlived the call: %v", left)
			}
		})
		t.Run(name+"/cancelled", func(t *testing.T) {
			n := time.Now().UnixNano() % 1e6
			marks := []string{fmt.Sprintf("%d.4", 500000+n), fmt.Sprintf("%d.5", 500000+n)}
			t.Cleanup(func() { killMarked(marks) })
			a := newToolAgent(t, func(c *Config) { c.Kernel = kernel })
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan string, 1)
			go func() {
				args, _ := json.Marshal(map[string]string{"command": fmt.Sprintf(`nohup sleep %s >/dev/null 2>&1 & setsid sleep %s >/dev/null 2>&1 & wait`, marks[0], marks[1])})
				text, _, _ := a.runTool(ctx, call("b", "bash", string(args)))
				done <- text
			}()
			testkit.WaitFor(t, 30*time.Second, "both sleeps to run", func() bool { return len(marked(marks)) == 2 })
			cancel()
			<-done
			if left := marked(marks); len(left) > 0 {
				t.Errorf("processes outlived the cancelled call: %v", left)
			}
		})
	}
}

// marked are the processes whose command line holds one of marks.
func marked(marks []string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		for _, m := range marks {
			if strings.Contains(string(b), "\x00"+m) {
				out = append(out, e.Name()+" "+strings.ReplaceAll(string(b), "\x00", " "))
			}
		}
	}
	return out
}

func killMarked(marks []string) {
	for _, p := range marked(marks) {
		if pid, err := strconv.Atoi(strings.Fields(p)[0]); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// TestBashRefusedWithoutLandlock: where the kernel offers no Landlock,
// bash is refused in one line and runs nothing, unless the member's
// sandbox is off.
func TestBashRefusedWithoutLandlock(t *testing.T) {
	none := func() sandbox.Kernel { return sandbox.Kernel{Namespaces: true} }
	a := newToolAgent(t, func(c *Config) { c.Kernel = none })
	text, isErr := runBash(t, a, "echo ran > ran.txt")
	if !isErr || !strings.HasPrefix(text, "refused: bash runs only in a sandbox") || strings.Contains(text, "\n") {
		t.Errorf("bash without Landlock = %q, want one line refusing it", text)
	}
	if _, err := os.Stat(filepath.Join(a.dir, "ran.txt")); err == nil {
		t.Error("bash ran without Landlock")
	}
	off := newToolAgent(t, func(c *Config) { c.Kernel, c.SandboxOff = none, true })
	if text, isErr := runBash(t, off, "echo ran > ran.txt"); isErr {
		t.Errorf("bash with the sandbox off = %q", text)
	}
	if _, err := os.Stat(filepath.Join(off.dir, "ran.txt")); err != nil {
		t.Errorf("bash with the sandbox off did not run: %v", err)
	}
}

// TestBashHasNoCapability: bash keeps no capability, even when huddle runs
// as root (whose capabilities Landlock does not take: loading a module
// or rebooting).
func TestBashHasNoCapability(t *testing.T) {
	a := newToolAgent(t, func(c *Config) { c.Kernel = kernels(t)["namespaces"] })
	text, _ := runBash(t, a, `grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status`)
	if n := strings.Count(text, "0000000000000000"); !strings.Contains(text, "CapEff") || n < 4 {
		t.Errorf("bash's capabilities:\n%s", text)
	}
	if os.Geteuid() == 0 && !strings.Contains(text, "CapBnd:\t0000000000000000") {
		t.Errorf("bash run by root keeps a bounding set:\n%s", text)
	}
}

// TestBashReadsNoSecretOfHuddle: huddle's own environment (an API key, a
// store URL with its token) reaches nothing bash prints: not its
// environment, not huddle's /proc/PID/environ ($PPID, raw or base64),
// not PID 1's.
func TestBashReadsNoSecretOfHuddle(t *testing.T) {
	const key = "sk-proj-HUDDLE-key-5e6f7a8b9c0d"
	const token = "huddle-store-T0KEN-1a2b3c4d"
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	huddle := exec.Command(exe)
	huddle.Env = append(os.Environ(), roleEnv+"=bash", "HUDDLE_LLM_TEST_DIR="+t.TempDir(),
		"HUDDLE_LLM_TEST_COMMAND=env; base64 -w0 /proc/$PPID/environ; echo; base64 /proc/1/environ; cat /proc/self/environ; echo; echo end",
		"OPENAI_API_KEY="+key, "HUDDLE_STORE=nats://"+token+"@127.0.0.1:4222/crew")
	out, err := huddle.Output()
	if err != nil {
		t.Fatalf("the re-executed huddle: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "end") {
		t.Fatalf("the command did not run to its end: %q", out)
	}
	if secretset.New(key, token).Holds(string(out)) {
		t.Errorf("bash read huddle's secrets:\n%s", out)
	}
}

// TestToolResultsAndBashEnvironmentHoldNoSecret: a secret huddle knows
// is scrubbed from every tool result before the model and the transcript
// see it, raw or base64 (read_file of a file holding it, bash's base64 of
// it), and a variable of huddle's that holds one is not in bash's
// environment.
func TestToolResultsAndBashEnvironmentHoldNoSecret(t *testing.T) {
	const secret = "ghp_HUDDLE-TOKEN-abcdef0123456789"
	t.Setenv("USER", "user-"+secret)
	secrets := secretset.New(secret, testKey)
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			f := newFakeServer(t, d,
				d.tools(call("r1", "read_file", `{"path":"notes.txt"}`), call("b1", "bash", `{"command":"base64 notes.txt; env"}`)),
				d.text("done"),
			)
			a, tr := newTestAgent(t, f, &fakeEnv{}, func(c *Config) { c.Scrub = secrets.String })
			if err := os.WriteFile(filepath.Join(a.dir, "notes.txt"), []byte("the token: "+secret+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Answer(context.Background(), "r", "read the notes"); err != nil {
				t.Fatal(err)
			}
			msgs := f.requests()[1].msgs
			for _, id := range []string{"r1", "b1"} {
				res := toolResult(t, msgs, id)
				if secrets.Holds(res.Text) || !strings.Contains(res.Text, "[redacted]") {
					t.Errorf("%s's result = %q, want the secret scrubbed", id, res.Text)
				}
			}
			if env := toolResult(t, msgs, "b1").Text; !strings.Contains(env, "HOME=") || strings.Contains(env, "USER=") {
				t.Errorf("bash's environment: %q, want USER, which holds a secret, left out", env)
			}
			tr.mu.Lock()
			defer tr.mu.Unlock()
			for _, e := range tr.entries {
				if b, _ := json.Marshal(e); secrets.Holds(string(b)) || secrets.Holds(e.Text) {
					t.Errorf("a secret is in the transcript: %s", b)
				}
			}
		})
	}
}
