package realcli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"huddle/internal/fakeapi"
)

// Transcript is what one scenario saw of a CLI: every line it was sent
// and printed, and every request its fake got.
type Transcript struct {
	CLI      string // claude | codex
	Name     string // the fixture's name
	Args     []string
	Env      Env
	Stdin    [][]byte
	Stdout   [][]byte
	Requests []fakeapi.Request
	// Stderr and Exit are what a CLI run to its end printed there and how
	// it exited (nil: status 0); a scenario that stops the CLI keeps
	// neither.
	Stderr string
	Exit   error
}

// keep copies what p and fake saw into t.
func (t *Transcript) keep(p *Proc, fake *fakeapi.Server) {
	t.Args = p.cmd.Args[1:]
	t.Stdin, t.Stdout, t.Requests = p.Sent(), p.Lines(), fake.Requests()
}

// secrets are strings that must never reach a fixture: the dummy keys
// the environments carry (a real key would never be there: the
// environment passes nothing but PATH from the user's).
var secrets = []string{claudeKey, codexKey}

// RootPlaceholder stands for the scenario's temporary directory in a
// fixture, so a fixture does not change with where it was recorded.
const RootPlaceholder = "/tmp/huddle-realcli"

// WriteFixture writes the transcript's stdout as DIR/<cli>/<name>.jsonl,
// its stdin (if it was sent any) as <name>.stdin.jsonl and its stderr, if it kept one, as
// <name>.stderr, the scenario's directory replaced
// by RootPlaceholder (in paths, and in the directory names Claude Code
// makes of them). It refuses a transcript that holds a key.
func (t *Transcript) WriteFixture(dir string) error {
	d := filepath.Join(dir, t.CLI)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return fmt.Errorf("realcli: %w", err)
	}
	files := map[string][]byte{".jsonl": t.fixture(t.Stdout)}
	if len(t.Stdin) > 0 {
		files[".stdin.jsonl"] = t.fixture(t.Stdin)
	}
	if t.Stderr != "" {
		files[".stderr"] = t.fixture([][]byte{[]byte(strings.TrimSuffix(t.Stderr, "\n"))})
	}
	for suffix, b := range files {
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				return fmt.Errorf("realcli: the %s fixture %s would hold a key", t.CLI, t.Name+suffix)
			}
		}
		if err := os.WriteFile(filepath.Join(d, t.Name+suffix), b, 0o644); err != nil {
			return fmt.Errorf("realcli: %w", err)
		}
	}
	return nil
}

func (t *Transcript) fixture(lines [][]byte) []byte {
	var b bytes.Buffer
	for _, l := range lines {
		b.Write(l)
		b.WriteByte('\n')
	}
	out := bytes.ReplaceAll(b.Bytes(), []byte(t.Env.Root), []byte(RootPlaceholder))
	// Claude Code names a project's directory after its path, / as -.
	slug := func(p string) []byte { return []byte(strings.ReplaceAll(p, "/", "-")) }
	return bytes.ReplaceAll(out, slug(t.Env.Root), slug(RootPlaceholder))
}

// StdoutText is the transcript's stdout as one string, for errors.
func (t *Transcript) StdoutText() string {
	var lines []string
	for _, l := range t.Stdout {
		lines = append(lines, string(l))
	}
	return strings.Join(lines, "\n")
}

// refusal is the error naming the first request a scenario's fake
// refused, nil when it refused none.
func refusal(fake *fakeapi.Server) error {
	if r := fake.Refused(); len(r) > 0 {
		return fmt.Errorf("realcli: the fake refused request %d: %s", r[0].N, r[0].Refused)
	}
	return nil
}

// runToEnd runs bin with args in e, its stdin closed (the prompt is an
// argument), until it exits or ctx ends, then stops whatever is left of
// it. exit is how it exited; err says it could not start or be stopped.
func runToEnd(ctx context.Context, name, bin string, args []string, e Env) (p *Proc, exit, err error) {
	p, err = Start(name, bin, args, e)
	if err != nil {
		return nil, nil, err
	}
	_ = p.CloseStdin()
	exit = p.Wait(ctx)
	return p, exit, p.Stop()
}

// runOnce is a scenario of one run of a CLI to its end, in t.Env against
// fake: t keeps what it printed on both streams, how it exited and what
// the fake was asked.
func (t *Transcript) runOnce(ctx context.Context, bin string, args []string, fake *fakeapi.Server) error {
	p, exit, err := runToEnd(ctx, t.CLI, bin, args, t.Env)
	if p == nil || err != nil {
		return err
	}
	t.keep(p, fake)
	t.Stderr, t.Exit = p.Stderr(), exit
	return refusal(fake)
}
