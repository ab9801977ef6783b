// Package realcli runs the real Claude Code and Codex CLIs for tests: it
// installs the pinned versions from npm into a cache outside the
// repository, makes environments that reach only a loopback fake of their
// model API, runs them as process groups it kills whole, and drives the
// scenarios whose streams become the fixtures of agents/testdata/real.
// Only tests and the recorder (./record) import it.
package realcli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// The versions every fixture and integration test is recorded with.
const (
	ClaudeVersion = "2.1.328"
	CodexVersion  = "0.169.0"
)

// CacheEnv names the directory to install into instead of the user's
// cache directory.
const CacheEnv = "HUDDLE_REALCLI_CACHE"

var packages = []string{
	"@anthropic-ai/claude-code@" + ClaudeVersion,
	"@openai/codex@" + CodexVersion,
}

// Bins are the installed CLIs.
type Bins struct {
	Dir    string // the install: Dir/node_modules/.bin holds both
	Claude string
	Codex  string // the npm launcher (node), whose child is the native binary
}

// installed is the marker written last into a complete install.
type installed struct {
	Packages []string `json:"packages"`
}

const markerName = "installed.json"

// CacheDir is where the pinned CLIs are installed: $HUDDLE_REALCLI_CACHE,
// or a directory named for the versions under the user's cache directory.
func CacheDir() (string, error) {
	if dir := os.Getenv(CacheEnv); dir != "" {
		return filepath.Abs(dir)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("realcli: no cache directory (set %s): %w", CacheEnv, err)
	}
	return filepath.Join(base, "huddle", "realcli", "claude-code-"+ClaudeVersion+"+codex-"+CodexVersion), nil
}

// Install returns the pinned CLIs, installing them with npm the first
// time. An existing complete install is reused; two processes installing
// at once take turns on a lock next to the install, and the second reuses
// what the first made. Every failure says what failed: npm missing, the
// registry unreachable, a binary that does not run.
func Install(ctx context.Context) (Bins, error) {
	dir, err := CacheDir()
	if err != nil {
		return Bins{}, err
	}
	if b, ok := complete(dir); ok {
		return b, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return Bins{}, fmt.Errorf("realcli: making the cache directory: %w", err)
	}
	unlock, err := lockFile(dir + ".lock")
	if err != nil {
		return Bins{}, err
	}
	defer unlock()
	if b, ok := complete(dir); ok {
		return b, nil // installed by another process while this one waited
	}
	if err := install(ctx, dir); err != nil {
		return Bins{}, err
	}
	b, ok := complete(dir)
	if !ok {
		return Bins{}, fmt.Errorf("realcli: %s is not a complete install after installing it", dir)
	}
	return b, nil
}

// complete says whether dir holds a complete install of the pinned
// versions, and its binaries.
func complete(dir string) (Bins, bool) {
	raw, err := os.ReadFile(filepath.Join(dir, markerName))
	if err != nil {
		return Bins{}, false
	}
	var m installed
	if json.Unmarshal(raw, &m) != nil || strings.Join(m.Packages, " ") != strings.Join(packages, " ") {
		return Bins{}, false
	}
	b := bins(dir)
	for _, p := range []string{b.Claude, b.Codex} {
		if _, err := os.Stat(p); err != nil {
			return Bins{}, false
		}
	}
	return b, true
}

func bins(dir string) Bins {
	bin := filepath.Join(dir, "node_modules", ".bin")
	return Bins{Dir: dir, Claude: filepath.Join(bin, "claude"), Codex: filepath.Join(bin, "codex")}
}

// lockFile takes an exclusive flock on path, waiting for another holder;
// the kernel drops it if this process dies.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("realcli: opening the install lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("realcli: taking the install lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil // closing drops the flock
}

// install runs npm into a fresh directory beside dir, checks that both
// binaries run and report the pinned versions, and renames it to dir, so a
// half-made install is never taken for a complete one.
func install(ctx context.Context, dir string) error {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return fmt.Errorf("realcli: npm is not on PATH (it installs %s): %w", strings.Join(packages, " "), err)
	}
	stage, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".partial-")
	if err != nil {
		return fmt.Errorf("realcli: making the install directory: %w", err)
	}
	defer os.RemoveAll(stage) // after the rename it is gone already
	// npm's cache and logs go inside the install, not into the user's ~/.npm.
	npmCache := filepath.Join(stage, ".npm-cache")
	args := append([]string{"install", "--prefix", stage, "--no-audit", "--no-fund", "--no-update-notifier", "--cache", npmCache}, packages...)
	cmd := exec.CommandContext(ctx, npm, args...)
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("realcli: npm install %s failed (is the npm registry reachable?): %w\n%s",
			strings.Join(packages, " "), err, lastLines(out.String(), 30))
	}
	if err := os.RemoveAll(npmCache); err != nil {
		return fmt.Errorf("realcli: removing npm's cache: %w", err)
	}
	b := bins(stage)
	if err := checkVersion(ctx, stage, b.Claude, ClaudeVersion+" (Claude Code)"); err != nil {
		return err
	}
	if err := checkVersion(ctx, stage, b.Codex, "codex-cli "+CodexVersion); err != nil {
		return err
	}
	m, _ := json.Marshal(installed{Packages: packages})
	if err := os.WriteFile(filepath.Join(stage, markerName), m, 0o644); err != nil {
		return fmt.Errorf("realcli: marking the install complete: %w", err)
	}
	if err := os.RemoveAll(dir); err != nil { // an install a crash left incomplete
		return fmt.Errorf("realcli: removing the incomplete install %s: %w", dir, err)
	}
	if err := os.Rename(stage, dir); err != nil {
		return fmt.Errorf("realcli: moving the install into place: %w", err)
	}
	return nil
}

// checkVersion runs bin --version in a throwaway home (a CLI may write
// there even for --version) and checks it prints want.
func checkVersion(ctx context.Context, stage, bin, want string) error {
	home, err := os.MkdirTemp(stage, "version-home-")
	if err != nil {
		return fmt.Errorf("realcli: %w", err)
	}
	defer os.RemoveAll(home)
	// Codex refuses to put its helpers in a CODEX_HOME under TMPDIR.
	var vars []string
	for _, v := range []string{"HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "TMPDIR"} {
		d := filepath.Join(home, strings.ToLower(v))
		if err := os.Mkdir(d, 0o755); err != nil {
			return fmt.Errorf("realcli: %w", err)
		}
		vars = append(vars, v+"="+d)
	}
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Env = append(vars, "PATH="+os.Getenv("PATH"))
	cmd.Dir = home
	out, err := cmd.CombinedOutput()
	got := strings.TrimSpace(string(out))
	if err != nil {
		return fmt.Errorf("realcli: %s --version failed after npm installed it: %w\n%s", bin, err, lastLines(got, 30))
	}
	if got != want {
		return fmt.Errorf("realcli: %s --version printed %q, want %q", bin, lastLines(got, 5), want)
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
