package team

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"huddle/protocol"
	"huddle/teamdir"
)

// A workspace's setup and teardown run only once the lead approved that
// exact script: the approval is remembered by the script's sha256 as
// setup-approved/<sha256> in the team directory (create-once), so an
// unchanged script is never asked again and a changed one always is.

// SetupApprovedDir is where approved scripts are remembered.
func SetupApprovedDir(dir string) string { return filepath.Join(dir, "setup-approved") }

// ScriptApproved reports whether the script whose sha256 is sum was
// approved by the lead.
func ScriptApproved(dir, sum string) bool {
	if !validSum(sum) {
		return false
	}
	_, err := os.Stat(filepath.Join(SetupApprovedDir(dir), sum))
	return err == nil
}

// RememberScript records that the lead approved the script whose sha256
// is sum, in request id; approving it twice is no error.
func RememberScript(dir, sum, id, by string) error {
	if !validSum(sum) {
		return fmt.Errorf("setup: %q is not a sha256", sum)
	}
	if err := os.MkdirAll(SetupApprovedDir(dir), teamdir.DirMode); err != nil {
		return err
	}
	b, _ := json.Marshal(map[string]string{"request": id, "by": by, "at": protocol.FormatTime(time.Now())})
	f, err := os.OpenFile(filepath.Join(SetupApprovedDir(dir), sum), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func validSum(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ErrScriptNotApproved: the workspace's scripts wait for the lead.
var ErrScriptNotApproved = errors.New("the workspace's setup and teardown are not approved")

// RunScript runs each command line with sh -c in the worktree at path,
// in order, its output to out; the first that fails stops it, and says
// which and what it printed last.
func RunScript(ctx context.Context, path string, cmds []string, out io.Writer) error {
	for _, c := range cmds {
		cmd := exec.CommandContext(ctx, "sh", "-c", c)
		cmd.Dir = path
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		var tail bytes.Buffer
		w := io.MultiWriter(out, &tail)
		cmd.Stdout, cmd.Stderr = w, w
		if err := cmd.Run(); err != nil {
			last := bytes.TrimSpace(tail.Bytes())
			if len(last) > 200 {
				last = last[len(last)-200:]
			}
			return fmt.Errorf("%q: %v: %s", c, err, last)
		}
	}
	return nil
}

// Teardown runs w's teardown in its worktree, when the lead approved its
// scripts: ErrScriptNotApproved when not (nothing ran).
func Teardown(ctx context.Context, dir string, w *Workspace) error {
	if len(w.Teardown) == 0 {
		return nil
	}
	if !ScriptApproved(dir, w.ScriptsSum()) {
		return ErrScriptNotApproved
	}
	if _, err := os.Stat(w.Path); errors.Is(err, os.ErrNotExist) {
		return nil // nothing left to tear down
	}
	if err := RunScript(ctx, w.Path, w.Teardown, io.Discard); err != nil {
		return fmt.Errorf("teardown: %w", err)
	}
	return nil
}
