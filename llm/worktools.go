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

// resolve maps a path the model gave to a path inside the member's
// directory, or refuses it: "..", an absolute path elsewhere, or a symlink
// (anywhere on the way) that leads out.
func (a *Agent) resolve(path string) (string, error) {
	if path == "" {
		return "", errors.New("refused: empty path")
	}
	var p string
	if filepath.IsAbs(path) {
		p = filepath.Clean(path)
		// An absolute path is fine when it names the directory as
		// configured, before its symlinks were resolved.
		if rel, err := filepath.Rel(filepath.Clean(a.cfg.Dir), p); err == nil && isLocal(rel) {
			p = filepath.Join(a.dir, rel)
		}
	} else {
		p = filepath.Join(a.dir, path)
	}
	if !within(a.dir, p) {
		return "", fmt.Errorf("refused: %s is outside your directory", path)
	}
	real, err := resolveExisting(p)
	if err != nil {
		return "", fmt.Errorf("refused: %s: %w", path, err)
	}
	if !within(a.dir, real) {
		return "", fmt.Errorf("refused: %s leads outside your directory (a symlink)", path)
	}
	return real, nil
}

func isLocal(rel string) bool {
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel))
}

func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && isLocal(rel)
}

// resolveExisting resolves the symlinks of the longest part of p that
// exists, and appends the rest (a file about to be written).
func resolveExisting(p string) (string, error) {
	rest := ""
	cur := p
	for {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return "", err
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

func (a *Agent) readFile(path string) (string, bool) {
	p, err := a.resolve(path)
	if err != nil {
		return err.Error(), true
	}
	if msg := notRegular(p, path, false); msg != "" {
		return msg, true
	}
	f, err := os.Open(p)
	if err != nil {
		return "read failed: " + relErr(a.dir, err), true
	}
	defer f.Close()
	var w capWriter
	w.limit = a.cfg.OutputCap
	if _, err := io.Copy(&w, f); err != nil {
		return "read failed: " + relErr(a.dir, err), true
	}
	return w.String(), false
}

func (a *Agent) writeFile(path, content string) (string, bool) {
	if msg := a.tooBig("write", path, len(content)); msg != "" {
		return msg, true
	}
	p, err := a.resolve(path)
	if err != nil {
		return err.Error(), true
	}
	if msg := notRegular(p, path, true); msg != "" {
		return msg, true
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "write failed: " + relErr(a.dir, err), true
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		return "write failed: " + relErr(a.dir, err), true
	}
	return fmt.Sprintf("wrote %d bytes to %s", len(content), path), false
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
	p, err := a.resolve(path)
	if err != nil {
		return err.Error(), true
	}
	if oldText == "" {
		return "edit refused: old_text is empty", true
	}
	if msg := notRegular(p, path, false); msg != "" {
		return msg, true
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "edit failed: " + relErr(a.dir, err), true
	}
	switch n := strings.Count(string(b), oldText); n {
	case 0:
		return "edit refused: old_text not found in " + path, true
	case 1:
	default:
		return fmt.Sprintf("edit refused: old_text occurs %d times in %s; give more context so it occurs once", n, path), true
	}
	out := strings.Replace(string(b), oldText, newText, 1)
	if msg := a.tooBig("edit", path, len(out)); msg != "" {
		return msg, true
	}
	if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
		return "edit failed: " + relErr(a.dir, err), true
	}
	return "edited " + path, false
}

func (a *Agent) listFiles(path string) (string, bool) {
	p, err := a.resolve(path)
	if err != nil {
		return err.Error(), true
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return "list failed: " + relErr(a.dir, err), true
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

// bash runs command in the member's directory under the tool timeout, in a
// process group of its own (killed whole on timeout), with a small
// environment: the huddle process's own variables, among them the API key,
// are not passed on.
func (a *Agent) bash(ctx context.Context, command string) (string, bool) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.ToolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", command)
	cmd.Dir = a.dir
	cmd.Env = bashEnv(a.dir)
	cmd.Stdin = nil
	var out capWriter
	out.limit = a.cfg.OutputCap
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err := cmd.Run()
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

func bashEnv(dir string) []string {
	env := []string{"HOME=" + dir, "TERM=dumb", "PWD=" + dir}
	for _, k := range []string{"PATH", "LANG", "LC_ALL", "TMPDIR", "USER"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// notRegular refuses a path that exists and is not a regular file: a FIFO
// or a device would block the loop or never end. missingOK: a file about
// to be created.
func notRegular(p, path string, missingOK bool) string {
	info, err := os.Stat(p)
	switch {
	case err != nil && missingOK && errors.Is(err, fs.ErrNotExist):
		return ""
	case err != nil:
		return "refused: " + path + ": no such file"
	case !info.Mode().IsRegular():
		return "refused: " + path + " is not a regular file"
	}
	return ""
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
