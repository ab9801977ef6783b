package full

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/ssh"
	"charm.land/wish/v2"
	wishtea "charm.land/wish/v2/bubbletea"

	"huddle/internal/cli"
	"huddle/store"
	"huddle/tui"
)

// sshKey is one key allowed in, with its name and what it may do.
type sshKey struct {
	key      ssh.PublicKey
	name     string
	readOnly bool
}

// keyNameRe is what a key's name keeps of its comment.
var keyNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9._-]+`) })

// readKeys reads an authorized_keys file: one key a line, blank lines and
// #-comments skipped; a line that is no key is an error naming it. A
// key's name is its comment's part before any @ ("alice@laptop": alice),
// else key-N.
func readKeys(path string, readOnly bool) ([]sshKey, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []sshKey
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, comment, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: not a public key: %v", path, n, err)
		}
		name, _, _ := strings.Cut(comment, "@")
		name = strings.Trim(keyNameRe().ReplaceAllString(name, "-"), "-")
		if name == "" {
			name = fmt.Sprintf("key-%d", n)
		}
		out = append(out, sshKey{key: k, name: name, readOnly: readOnly})
	}
	return out, sc.Err()
}

// sshKeys are the keys of both files, read again at each login so that a
// key taken out is out at once.
type sshKeys struct{ decide, watch string }

func (k sshKeys) all() ([]sshKey, error) {
	d, err := readKeys(k.decide, false)
	if err != nil {
		return nil, err
	}
	w, err := readKeys(k.watch, true)
	if err != nil {
		return nil, err
	}
	return append(d, w...), nil
}

// find is the key that matches key; a key in both files may decide.
func (k sshKeys) find(key ssh.PublicKey) (sshKey, bool) {
	all, err := k.all()
	if err != nil {
		return sshKey{}, false
	}
	for _, a := range all {
		if ssh.KeysEqual(a.key, key) {
			return a, true
		}
	}
	return sshKey{}, false
}

type sshKeyCtx struct{}

// runSSH is huddle ssh: the team's screen served over SSH at addr.
func runSSH(cl *cli.Cmdline, addr, decide, watch, hostKey string) int {
	if code, ok := cl.WantArgs(0, 0, ""); !ok {
		return code
	}
	if decide == "" && watch == "" {
		return cl.UsageError("--authorized-keys FILE is required: nobody could log in")
	}
	keys := sshKeys{decide: decide, watch: watch}
	if _, err := keys.all(); err != nil {
		return cl.UsageError("%v", err)
	}
	if hostKey == "" {
		base, err := os.UserConfigDir()
		if err != nil {
			return cl.Fail(fmt.Errorf("no configuration directory for the host key (give --host-key): %w", err))
		}
		hostKey = filepath.Join(base, "huddle", "ssh_host_ed25519")
	}
	if err := os.MkdirAll(filepath.Dir(hostKey), 0o700); err != nil {
		return cl.Fail(err)
	}
	return cl.WithTeam(func(ctx context.Context, st store.Store) int {
		if !cl.Remote() {
			// The screens' own store, paced as a screen's.
			fst, err := screenStore(cl.Dir)
			if err != nil {
				return cl.Fail(err)
			}
			defer fst.Close()
			st = fst
		}
		ui := tui.RunOptions{Dir: cl.Dir, Store: st, Footer: "over SSH: the team in " + cl.Dir}
		if cl.Remote() {
			ui = storeRunOptions(ctx, st, cl.StoreName())
			ui.Footer = "over SSH: the team in the store " + cl.StoreName()
		}
		srv, err := wish.NewServer(
			wish.WithAddress(addr),
			wish.WithHostKeyPath(hostKey),
			wish.WithPublicKeyAuth(func(sctx ssh.Context, key ssh.PublicKey) bool {
				k, ok := keys.find(key)
				if ok {
					sctx.SetValue(sshKeyCtx{}, k)
				}
				return ok
			}),
			wish.WithMiddleware(wishtea.MiddlewareWithProgramHandler(func(sess ssh.Session) *tea.Program {
				return sshProgram(ctx, sess, ui, st)
			})),
		)
		if err != nil {
			return cl.Fail(fmt.Errorf("ssh: %w", err))
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return cl.Fail(fmt.Errorf("ssh: %w", err))
		}
		fmt.Fprintf(cl.Stdout, "serving the team over SSH on %s (ssh -p %s HOST); Ctrl-C stops\n", ln.Addr(), portOf(ln.Addr()))
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ln) }()
		select {
		case err := <-done:
			return cl.Fail(fmt.Errorf("ssh: %w", err))
		case <-ctx.Done():
		}
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, ssh.ErrServerClosed) {
			_ = srv.Close()
		}
		return cli.ExitOK
	})
}

func portOf(a net.Addr) string {
	_, port, _ := net.SplitHostPort(a.String())
	return port
}

// sshProgram is the screen of one session: the lead under its key's name,
// or a watcher.
func sshProgram(ctx context.Context, sess ssh.Session, ui tui.RunOptions, st store.Store) *tea.Program {
	k, _ := sess.Context().Value(sshKeyCtx{}).(sshKey)
	if k.name == "" {
		return nil // no key: nothing to show (the auth handler let nobody else in)
	}
	ctx, cancel := context.WithCancel(ctx)
	if k.readOnly {
		ui.Actions = tui.WatchOnly(k.name + "'s key may watch, not decide (--read-only-keys)")
	} else {
		ui.Actions = tui.LeadActions(tui.StoreLeadAs(ctx, st, "lead:"+k.name))
	}
	ui.Footer += " · " + k.name
	p, stop, err := tui.NewProgram(ctx, ui, wishtea.MakeOptions(sess)...)
	if err != nil {
		cancel()
		wish.Fatalln(sess, "huddle: "+err.Error())
		return nil
	}
	go func() {
		<-sess.Context().Done() // after the program: the session ends with it
		cancel()
		_ = stop()
	}()
	return p
}
