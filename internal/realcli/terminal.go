package realcli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/charmbracelet/x/vt"
	"github.com/creack/pty"
)

// ClaudeInteractive readies e (a ClaudeEnv) for the interactive TUI,
// which asks a new user three questions before anything else: the theme,
// whether to use the API key it found, whether to trust the working
// directory. They are answered in $CLAUDE_CONFIG_DIR/.claude.json as the
// CLI itself records the answers, and its agent teams are turned on.
func ClaudeInteractive(e *Env) error {
	config := e.Var("CLAUDE_CONFIG_DIR")
	if config == "" {
		return fmt.Errorf("realcli: %s is not a Claude Code environment", e.Root)
	}
	state, err := json.Marshal(map[string]any{
		"hasCompletedOnboarding": true,
		"theme":                  "dark",
		// The CLI keeps the last 20 characters of a key the user approved.
		"customApiKeyResponses": map[string]any{"approved": []string{claudeKey[len(claudeKey)-20:]}, "rejected": []string{}},
		"projects":              map[string]any{e.Work: map[string]any{"hasTrustDialogAccepted": true}},
	})
	if err != nil {
		return fmt.Errorf("realcli: %w", err)
	}
	if err := os.WriteFile(filepath.Join(config, ".claude.json"), state, 0o600); err != nil {
		return fmt.Errorf("realcli: %w", err)
	}
	e.Vars = append(e.Vars, "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1", "TERM=xterm-256color")
	return nil
}

// Terminal is a CLI running on a pseudo-terminal, as a person runs it,
// its output drawn by a terminal emulator whose screen a test reads and
// whose answers to the CLI's queries (device attributes, cursor position)
// go back to it. Stop ends it; every Terminal must be stopped.
type Terminal struct {
	cmd    *exec.Cmd
	tty    *os.File
	exited chan struct{} // closed once the process was waited for
	drawn  chan struct{} // closed once the terminal's output ended

	mu sync.Mutex
	em *vt.Emulator
}

// StartTerminal runs bin with args in e.Work on a cols×rows terminal, as
// the leader of a session of its own.
func StartTerminal(bin string, args []string, e Env, cols, rows int) (*Terminal, error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = e.Work
	cmd.Env = append([]string(nil), e.Vars...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Pdeathsig: syscall.SIGKILL}
	tty, err := pty.StartWithAttrs(cmd, &pty.Winsize{Rows: uint16(rows), Cols: uint16(cols)}, cmd.SysProcAttr)
	if err != nil {
		return nil, fmt.Errorf("realcli: starting %s on a terminal: %w", filepath.Base(bin), err)
	}
	t := &Terminal{cmd: cmd, tty: tty, exited: make(chan struct{}), drawn: make(chan struct{}), em: vt.NewEmulator(cols, rows)}
	go t.draw()
	go func() {
		// The emulator's answers, read to the end even once the terminal
		// is gone: the emulator waits on its pipe until they are.
		if _, err := io.Copy(tty, t.em); err != nil {
			_, _ = io.Copy(io.Discard, t.em)
		}
	}()
	go func() {
		_ = cmd.Wait()
		close(t.exited)
	}()
	return t, nil
}

// draw feeds what the CLI prints to the emulator until the terminal
// closes.
func (t *Terminal) draw() {
	defer close(t.drawn)
	buf := make([]byte, 32<<10)
	for {
		n, err := t.tty.Read(buf)
		t.mu.Lock()
		_, _ = t.em.Write(buf[:n])
		t.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// Screen is the text on the terminal's screen now, a line per row.
func (t *Terminal) Screen() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.em.String()
}

// Type writes keys to the terminal as a person's keyboard does: "\r" is
// Enter, "\x1b[B" the down arrow.
func (t *Terminal) Type(keys string) error {
	_, err := io.WriteString(t.tty, keys)
	return err
}

// Exited is closed once the CLI has exited.
func (t *Terminal) Exited() <-chan struct{} { return t.exited }

// Stop kills the CLI's session if it still runs and closes the terminal.
func (t *Terminal) Stop() {
	select {
	case <-t.exited:
	default:
		_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
		<-t.exited
	}
	_ = t.tty.Close()
	<-t.drawn
	if c, ok := t.em.InputPipe().(io.Closer); ok {
		_ = c.Close() // ends the answers' copy
	}
}
