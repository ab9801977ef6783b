package realcli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"huddle/internal/testkit"
)

// fakeNPM is a stand-in for npm: `npm install --prefix DIR …` appends a
// line to $FAKE_NPM_LOG and, unless $FAKE_NPM_FAIL says how to fail,
// makes DIR/node_modules/.bin/{claude,codex} print the versions
// $FAKE_CLAUDE_VERSION (default the pinned one) and the pinned Codex's.
// With $FAKE_NPM_GO set it first waits (up to a minute) for that file to
// exist.
const fakeNPM = `#!/bin/sh
echo "$*" >> "$FAKE_NPM_LOG"
if [ -n "$FAKE_NPM_GO" ]; then
	n=0
	while [ ! -e "$FAKE_NPM_GO" ] && [ $n -lt 6000 ]; do sleep 0.01; n=$((n+1)); done
fi
if [ -n "$FAKE_NPM_FAIL" ]; then
	echo "npm error code ENOTFOUND" >&2
	echo "npm error $FAKE_NPM_FAIL" >&2
	exit 1
fi
prefix=
while [ $# -gt 0 ]; do
	if [ "$1" = --prefix ]; then prefix=$2; fi
	shift
done
mkdir -p "$prefix/node_modules/.bin" || exit 1
printf '#!/bin/sh\necho "%s (Claude Code)"\n' "${FAKE_CLAUDE_VERSION:-` + ClaudeVersion + `}" > "$prefix/node_modules/.bin/claude"
printf '#!/bin/sh\necho "codex-cli ` + CodexVersion + `"\n' > "$prefix/node_modules/.bin/codex"
chmod +x "$prefix/node_modules/.bin/claude" "$prefix/node_modules/.bin/codex"
`

// withFakeNPM puts fakeNPM first on PATH and the cache in a temporary
// directory, and returns the cache and npm's log.
func withFakeNPM(t *testing.T) (cache, log string) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "npm"), []byte(fakeNPM), 0o755); err != nil {
		t.Fatal(err)
	}
	cache, log = filepath.Join(dir, "cache", "realcli"), filepath.Join(dir, "npm.log")
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	t.Setenv(CacheEnv, cache)
	t.Setenv("FAKE_NPM_LOG", log)
	return cache, log
}

func npmRuns(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func TestInstallOnceThenReuse(t *testing.T) {
	cache, log := withFakeNPM(t)
	ctx := context.Background()
	b, err := Install(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b.Dir != cache || b.Claude != filepath.Join(cache, "node_modules", ".bin", "claude") || b.Codex != filepath.Join(cache, "node_modules", ".bin", "codex") {
		t.Errorf("Install = %+v, want the bins under %s", b, cache)
	}
	runs := npmRuns(t, log)
	if len(runs) != 1 {
		t.Fatalf("npm ran %d times: %q", len(runs), runs)
	}
	for _, want := range append([]string{"install --prefix", "--cache"}, packages...) {
		if !strings.Contains(runs[0], want) {
			t.Errorf("npm %s: no %q", runs[0], want)
		}
	}
	if strings.Contains(runs[0], filepath.Join(os.Getenv("HOME"), ".npm")) {
		t.Errorf("npm %s uses the user's cache", runs[0])
	}
	if _, err := Install(ctx); err != nil {
		t.Fatal(err)
	}
	if runs := npmRuns(t, log); len(runs) != 1 {
		t.Errorf("a second Install ran npm again: %q", runs)
	}
	leftovers, _ := filepath.Glob(cache + ".partial-*")
	if len(leftovers) > 0 {
		t.Errorf("left %v", leftovers)
	}
}

// installHelperEnv makes the test binary an installing process of
// TestInstallTakesTurns instead of running the tests.
const installHelperEnv = "REALCLI_INSTALL_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(installHelperEnv) == "1" {
		if _, err := Install(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestInstallTakesTurns runs two processes that install at once: the
// first holds npm until the second is seen blocked on the install lock,
// and the second then reuses what the first installed.
func TestInstallTakesTurns(t *testing.T) {
	cache, log := withFakeNPM(t)
	goFile := filepath.Join(t.TempDir(), "go")
	t.Setenv("FAKE_NPM_GO", goFile)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var cmds []*exec.Cmd
	for range 2 {
		cmd := exec.CommandContext(ctx, os.Args[0])
		cmd.Env = append(os.Environ(), installHelperEnv+"=1")
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// On a failure the helper's npm may still be waiting: end the group.
		t.Cleanup(func() {
			if t.Failed() {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}
		})
		cmds = append(cmds, cmd)
	}
	testkit.WaitFor(t, 30*time.Second, "one process in npm and the other blocked on the lock", func() bool {
		return len(npmRuns(t, log)) == 1 && blockedFlocks(t, cache+".lock") > 0
	})
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("an installing process: %v", err)
		}
	}
	if runs := npmRuns(t, log); len(runs) != 1 {
		t.Errorf("two processes installing at once ran npm %d times: %q", len(runs), runs)
	}
	if _, ok := complete(cache); !ok {
		t.Errorf("%s is not a complete install", cache)
	}
}

// blockedFlocks counts the flock requests waiting in the kernel on the
// file at path (the lines of /proc/locks marked -> that name its inode).
func blockedFlocks(t *testing.T, path string) int {
	info, err := os.Stat(path)
	if err != nil {
		return 0 // not made yet
	}
	inode := ":" + strconv.FormatUint(info.Sys().(*syscall.Stat_t).Ino, 10)
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		// 1: -> FLOCK  ADVISORY  WRITE 1234 fe:00:567 0 EOF
		if f := strings.Fields(l); len(f) > 6 && f[1] == "->" && f[2] == "FLOCK" && strings.HasSuffix(f[6], inode) {
			n++
		}
	}
	return n
}

func TestInstallSaysWhatFailed(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"npm missing", map[string]string{"PATH": "/nonexistent"}, []string{"npm is not on PATH"}},
		{"registry unreachable", map[string]string{"FAKE_NPM_FAIL": "getaddrinfo ENOTFOUND registry.npmjs.org"},
			[]string{"npm install @anthropic-ai/claude-code@" + ClaudeVersion, "is the npm registry reachable?", "ENOTFOUND registry.npmjs.org"}},
		{"wrong version", map[string]string{"FAKE_CLAUDE_VERSION": "9.9.9"},
			[]string{"claude --version printed", "9.9.9 (Claude Code)", ClaudeVersion}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cache, _ := withFakeNPM(t)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			_, err := Install(context.Background())
			if err == nil {
				t.Fatal("Install succeeded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if _, ok := complete(cache); ok {
				t.Error("a failed install looks complete")
			}
			if leftovers, _ := filepath.Glob(cache + "*"); len(leftovers) > 1 { // the lock stays
				t.Errorf("a failed install left %v", leftovers)
			}
		})
	}
}

func TestCacheDirDefault(t *testing.T) {
	t.Setenv(CacheEnv, "")
	t.Setenv("XDG_CACHE_HOME", "/cache-home")
	dir, err := CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	if want := "/cache-home/huddle/realcli/claude-code-" + ClaudeVersion + "+codex-" + CodexVersion; dir != want {
		t.Errorf("CacheDir = %s, want %s", dir, want)
	}
}
