// Package nodekit runs the independent A2A and MCP implementations huddle
// is tested against: the A2A project's JavaScript SDK and MCP's
// TypeScript SDK, pinned in npm/package-lock.json, installed once into a
// cache outside the repository, and driven by the scripts in scripts/ as
// helper processes. Only tests import it.
package nodekit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// The pinned versions, as npm/package.json names them.
const (
	A2AJSVersion = "1.3.0"  // @a2a-js/sdk
	MCPTSVersion = "1.32.2" // @modelcontextprotocol/sdk
)

//go:embed npm/package.json npm/package-lock.json
var manifest embed.FS

//go:embed scripts/*.mjs
var scripts embed.FS

// CacheEnv names the directory to install into instead of the user's
// cache directory.
const CacheEnv = "HUDDLE_NODEKIT_CACHE"

// Kit is an install: node, and the directory whose node_modules the
// scripts import from.
type Kit struct {
	Dir  string
	Node string
}

// cacheDir is where the pinned packages go: $HUDDLE_NODEKIT_CACHE, or a
// directory named for the lock file's digest under the user's cache.
func cacheDir() (string, error) {
	lock, err := manifest.ReadFile("npm/package-lock.json")
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(lock)
	name := "npm-" + hex.EncodeToString(sum[:6])
	if dir := os.Getenv(CacheEnv); dir != "" {
		abs, err := filepath.Abs(dir)
		return filepath.Join(abs, name), err
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("nodekit: no cache directory (set %s): %w", CacheEnv, err)
	}
	return filepath.Join(base, "huddle", "nodekit", name), nil
}

// Install returns the kit, running npm ci the first time. Two processes
// installing at once take turns on a lock beside the install; a missing
// node or npm, or a registry that cannot be reached, is an error that says
// so: never a skip.
func Install(ctx context.Context) (Kit, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return Kit{}, fmt.Errorf("nodekit: node is not on PATH (the independent A2A and MCP clients run on it): %w", err)
	}
	dir, err := cacheDir()
	if err != nil {
		return Kit{}, err
	}
	if complete(dir) {
		return Kit{Dir: dir, Node: node}, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return Kit{}, fmt.Errorf("nodekit: making the cache directory: %w", err)
	}
	unlock, err := lockFile(dir + ".lock")
	if err != nil {
		return Kit{}, err
	}
	defer unlock()
	if !complete(dir) {
		if err := install(ctx, dir); err != nil {
			return Kit{}, err
		}
	}
	return Kit{Dir: dir, Node: node}, nil
}

const marker = "installed"

func complete(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, marker))
	return err == nil
}

func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("nodekit: opening the install lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("nodekit: taking the install lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// install runs npm ci on the pinned lock file in a directory beside dir,
// then renames it into place, so a half-made install is never used.
func install(ctx context.Context, dir string) error {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return fmt.Errorf("nodekit: npm is not on PATH (it installs @a2a-js/sdk@%s and @modelcontextprotocol/sdk@%s): %w", A2AJSVersion, MCPTSVersion, err)
	}
	stage, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".partial-")
	if err != nil {
		return fmt.Errorf("nodekit: %w", err)
	}
	defer os.RemoveAll(stage)
	for _, name := range []string{"package.json", "package-lock.json"} {
		b, err := manifest.ReadFile("npm/" + name)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(stage, name), b, 0o644); err != nil {
			return fmt.Errorf("nodekit: %w", err)
		}
	}
	npmCache := filepath.Join(stage, ".npm-cache")
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--no-update-notifier", "--cache", npmCache)
	cmd.Dir = stage
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("nodekit: npm ci of @a2a-js/sdk@%s and @modelcontextprotocol/sdk@%s failed (is the npm registry reachable?): %w\n%s",
			A2AJSVersion, MCPTSVersion, err, lastLines(out.String(), 30))
	}
	if err := os.RemoveAll(npmCache); err != nil {
		return fmt.Errorf("nodekit: %w", err)
	}
	if err := os.WriteFile(filepath.Join(stage, marker), nil, 0o644); err != nil {
		return fmt.Errorf("nodekit: %w", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("nodekit: removing an incomplete install: %w", err)
	}
	if err := os.Rename(stage, dir); err != nil {
		return fmt.Errorf("nodekit: moving the install into place: %w", err)
	}
	return nil
}

// Command is `node SCRIPT args…` for one of scripts/, written into the
// install (where its imports resolve) under a name of its content's digest,
// so scripts of two checkouts never clash.
func (k Kit) Command(ctx context.Context, script string, args ...string) (*exec.Cmd, error) {
	b, err := fs.ReadFile(scripts, "scripts/"+script)
	if err != nil {
		return nil, fmt.Errorf("nodekit: no script %s: %w", script, err)
	}
	sum := sha256.Sum256(b)
	path := filepath.Join(k.Dir, "scripts", strings.TrimSuffix(script, ".mjs")+"-"+hex.EncodeToString(sum[:6])+".mjs")
	if _, err := os.Stat(path); err != nil {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
		if err != nil {
			return nil, err
		}
		if _, err := tmp.Write(b); err != nil {
			tmp.Close()
			return nil, err
		}
		if err := tmp.Close(); err != nil {
			return nil, err
		}
		if err := os.Rename(tmp.Name(), path); err != nil {
			return nil, err
		}
	}
	cmd := exec.CommandContext(ctx, k.Node, append([]string{path}, args...)...)
	cmd.Dir = k.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return cmd, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
