package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"huddle/internal/sandbox"
)

// runWorkTool runs an enabled work tool, confined to the member's directory.
func (a *Agent) runWorkTool(ctx context.Context, call ToolCall) (string, bool) {
	switch call.Name {
	case "read_file":
		var args struct{ Path *string }
		if msg := decodeArgs(call, &args); msg != "" {
			return msg, true
		}
		if args.Path == nil {
			return badArgs(call, "path is required"), true
		}
		a.cfg.Env.Activity("read_file " + *args.Path)
		return a.readFile(*args.Path)
	case "write_file":
		var args struct{ Path, Content *string }
		if msg := decodeArgs(call, &args); msg != "" {
			return msg, true
		}
		if args.Path == nil || args.Content == nil {
			return badArgs(call, "path and content are required"), true
		}
		a.cfg.Env.Activity("write_file " + *args.Path)
		return a.writeFile(*args.Path, *args.Content)
	case "edit_file":
		var args struct {
			Path    *string
			OldText *string `json:"old_text"`
			NewText *string `json:"new_text"`
		}
		if msg := decodeArgs(call, &args); msg != "" {
			return msg, true
		}
		if args.Path == nil || args.OldText == nil || args.NewText == nil {
			return badArgs(call, "path, old_text and new_text are required"), true
		}
		a.cfg.Env.Activity("edit_file " + *args.Path)
		return a.editFile(*args.Path, *args.OldText, *args.NewText)
	case "list_files":
		var args struct{ Path *string }
		if msg := decodeArgs(call, &args); msg != "" {
			return msg, true
		}
		path := "."
		if args.Path != nil && *args.Path != "" {
			path = *args.Path
		}
		a.cfg.Env.Activity("list_files " + path)
		return a.listFiles(path)
	case "bash":
		var args struct{ Command *string }
		if msg := decodeArgs(call, &args); msg != "" {
			return msg, true
		}
		if args.Command == nil {
			return badArgs(call, "command is required"), true
		}
		a.cfg.Env.Activity("bash " + truncate(*args.Command, 60))
		return a.bash(ctx, *args.Command)
	}
	return fmt.Sprintf("unknown tool %q", call.Name), true
}

// name maps a path the model gave to a name inside the member's directory,
// for a.root: relative to it, or absolute under it (as configured or with
// its symlinks resolved). The os.Root that opens it is the check: it
// resolves each component from the directory's descriptor and refuses
// whatever leads out, ".." or a symlink, even one flipped from outside
// between two steps, so no path is checked first and used after.
func (a *Agent) name(path string) (string, error) {
	if path == "" {
		return "", errors.New("refused: empty path")
	}
	p := filepath.Clean(path)
	if filepath.IsAbs(p) {
		rel, ok := under(filepath.Clean(a.cfg.Dir), p)
		if !ok {
			rel, ok = under(a.dir, p)
		}
		if !ok {
			return "", fmt.Errorf("refused: %s is outside your directory", path)
		}
		p = rel
	}
	if !filepath.IsLocal(p) && p != "." {
		return "", fmt.Errorf("refused: %s is outside your directory", path)
	}
	return p, nil
}

// under is p relative to dir, when p is dir or beneath it.
func under(dir, p string) (string, bool) {
	rel, err := filepath.Rel(dir, p)
	if err != nil || (rel != "." && !filepath.IsLocal(rel)) {
		return "", false
	}
	return rel, true
}

// fileErr is what a tool says of a failed file operation on path: a
// refusal when the path leads out of the directory or names no regular
// file, else the failure, its paths relative to the directory.
func (a *Agent) fileErr(op, path string, err error) string {
	switch {
	case strings.Contains(err.Error(), "path escapes from parent"):
		return fmt.Sprintf("refused: %s leads outside your directory (.. or a symlink)", path)
	case errors.Is(err, syscall.EISDIR):
		return "refused: " + path + " is not a regular file"
	case errors.Is(err, fs.ErrNotExist):
		return "refused: " + path + ": no such file"
	}
	return op + " failed: " + relErr(a.dir, err)
}

// openRegular opens path in the member's directory with flag and checks,
// on what it opened, that it is a regular file: a FIFO or a device would
// block the loop or never end (O_NONBLOCK keeps the open itself from
// waiting on one).
func (a *Agent) openRegular(op, path string, flag int) (*os.File, string) {
	name, err := a.name(path)
	if err != nil {
		return nil, err.Error()
	}
	f, err := a.root.OpenFile(name, flag|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return nil, a.fileErr(op, path, err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, a.fileErr(op, path, err)
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, "refused: " + path + " is not a regular file"
	}
	return f, ""
}

// readFile returns the first OutputCap bytes of a file, and says how
// large the file is when that is not all of it: the rest is never read.
func (a *Agent) readFile(path string) (string, bool) {
	f, msg := a.openRegular("read", path, os.O_RDONLY)
	if msg != "" {
		return msg, true
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(a.cfg.OutputCap)+1))
	if err != nil {
		return a.fileErr("read", path, err), true
	}
	if len(b) <= a.cfg.OutputCap {
		return string(b), false
	}
	size := int64(len(b))
	if info, err := f.Stat(); err == nil && info.Size() > size {
		size = info.Size()
	}
	return fmt.Sprintf("%s\n[truncated: %s holds %d bytes; read_file returns the first %d]", b[:a.cfg.OutputCap], path, size, a.cfg.OutputCap), false
}

func (a *Agent) writeFile(path, content string) (string, bool) {
	if msg := a.tooBig("write", path, len(content)); msg != "" {
		return msg, true
	}
	name, err := a.name(path)
	if err != nil {
		return err.Error(), true
	}
	if parent := filepath.Dir(name); parent != "." {
		if err := a.root.MkdirAll(parent, 0o755); err != nil {
			return a.fileErr("write", path, err), true
		}
	}
	// O_RDWR, not O_WRONLY: a FIFO opens without a reader, and is refused.
	f, msg := a.openRegular("write", path, os.O_RDWR|os.O_CREATE)
	if msg != "" {
		return msg, true
	}
	if err := rewrite(f, content); err != nil {
		return a.fileErr("write", path, err), true
	}
	return fmt.Sprintf("wrote %d bytes to %s", len(content), path), false
}

// rewrite makes f hold content and nothing else, and closes it.
func rewrite(f *os.File, content string) error {
	err := f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(content), 0)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// tooBig is why a write or an edit that would leave size bytes in path is
// refused, or "": a file the model sends whole (and the transcript keeps)
// is bounded, as a tool result is.
func (a *Agent) tooBig(op, path string, size int) string {
	if size <= a.cfg.MaxFile {
		return ""
	}
	return fmt.Sprintf("%s refused: %s would hold %d bytes, over the %d a file may (write a smaller one, or several)", op, path, size, a.cfg.MaxFile)
}

func (a *Agent) editFile(path, oldText, newText string) (string, bool) {
	if oldText == "" {
		return "edit refused: old_text is empty", true
	}
	f, msg := a.openRegular("edit", path, os.O_RDWR)
	if msg != "" {
		return msg, true
	}
	b, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return a.fileErr("edit", path, err), true
	}
	out, msg := edited(string(b), path, oldText, newText)
	if msg == "" {
		msg = a.tooBig("edit", path, len(out))
	}
	if msg != "" {
		f.Close()
		return msg, true
	}
	if err := rewrite(f, out); err != nil {
		return a.fileErr("edit", path, err), true
	}
	return "edited " + path, false
}

// edited is text with the one occurrence of oldText replaced, or why not.
func edited(text, path, oldText, newText string) (string, string) {
	switch n := strings.Count(text, oldText); n {
	case 0:
		return "", "edit refused: old_text not found in " + path
	case 1:
		return strings.Replace(text, oldText, newText, 1), ""
	default:
		return "", fmt.Sprintf("edit refused: old_text occurs %d times in %s; give more context so it occurs once", n, path)
	}
}

func (a *Agent) listFiles(path string) (string, bool) {
	name, err := a.name(path)
	if err != nil {
		return err.Error(), true
	}
	d, err := a.root.Open(name)
	if err != nil {
		return a.fileErr("list", path, err), true
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return a.fileErr("list", path, err), true
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			name += "/"
		}
		names = append(names, name)
	}
	sort.Strings(names)
	var w capWriter
	w.limit = a.cfg.OutputCap
	_, _ = w.Write([]byte(strings.Join(names, "\n")))
	if len(names) == 0 {
		return "(empty)", false
	}
	return w.String(), false
}

// bash runs command in the member's directory under the tool timeout, with
// a small environment (huddle's own variables, the API key among them, are
// not passed on): confined by internal/sandbox, and refused where the
// kernel offers no Landlock, unless the member's sandbox is off. Either way
// nothing it started outlives the call.
func (a *Agent) bash(ctx context.Context, command string) (string, bool) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.ToolTimeout)
	defer cancel()
	var out capWriter
	out.limit = a.cfg.OutputCap
	var err error
	if a.cfg.SandboxOff {
		err = a.bashUnconfined(ctx, command, &out)
	} else {
		k := a.kernel()
		if k.Landlock < 1 {
			return fmt.Sprintf("refused: bash runs only in a sandbox, and %v; team.json \"sandbox\": \"off\" on this member runs it unconfined", sandbox.ErrNoLandlock), true
		}
		err = sandbox.Run(ctx, sandbox.Options{Dir: a.dir, Env: a.bashEnv(false), Stdout: &out, Kernel: k}, "bash", "-c", command)
	}
	text := out.String()
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return fmt.Sprintf("%s\n[killed: timed out after %s]", text, a.cfg.ToolTimeout), true
	case err != nil:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Sprintf("%s\n[exit status %d]", text, ee.ExitCode()), true
		}
		return fmt.Sprintf("%s\n[failed: %v]", text, err), true
	}
	return text, false
}

// kernel is what the kernel offers the sandbox.
func (a *Agent) kernel() sandbox.Kernel {
	if a.cfg.Kernel != nil {
		return a.cfg.Kernel()
	}
	return sandbox.Probe()
}

// bashUnconfined runs command as huddle's user may (the member's sandbox
// is off), in a process group of its own, killed whole when the call ends.
func (a *Agent) bashUnconfined(ctx context.Context, command string, out *capWriter) error {
	cmd := exec.CommandContext(ctx, "bash", "-c", command)
	cmd.Dir = a.dir
	cmd.Env = a.bashEnv(true)
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what it left in its group
	}
	return err
}

// bashEnv is bash's whole environment: none of huddle's variables but
// these few, and none that holds a secret; tmpdir passes huddle's TMPDIR
// on (the sandbox gives a temporary directory of its own).
func (a *Agent) bashEnv(tmpdir bool) []string {
	env := []string{"HOME=" + a.dir, "TERM=dumb", "PWD=" + a.dir}
	keep := []string{"PATH", "LANG", "LC_ALL", "USER"}
	if tmpdir {
		keep = append(keep, "TMPDIR")
	}
	for _, k := range keep {
		if v, ok := os.LookupEnv(k); ok && a.scrub(v) == v {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// relErr shows a file error with paths relative to the member's directory.
func relErr(dir string, err error) string {
	return strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "")
}

// capWriter keeps the first limit bytes and counts the rest.
type capWriter struct {
	buf     bytes.Buffer
	limit   int
	dropped int
}

func (w *capWriter) Write(p []byte) (int, error) {
	room := w.limit - w.buf.Len()
	if room >= len(p) {
		w.buf.Write(p)
		return len(p), nil
	}
	if room > 0 {
		w.buf.Write(p[:room])
	}
	w.dropped += len(p) - max(room, 0)
	return len(p), nil
}

func (w *capWriter) String() string {
	if w.dropped == 0 {
		return w.buf.String()
	}
	return fmt.Sprintf("%s\n[truncated: %d more bytes]", w.buf.String(), w.dropped)
}
