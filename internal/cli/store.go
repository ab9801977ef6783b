package cli

// The store that keeps a team (docs/ARCHITECTURE.md, "The team directory
// and the store"): the --store and --nats-creds flags, and the one place a
// command's store is chosen: NATS for --store (Full.OpenStore, huddle-full's),
// else filestore on --dir (WithTeam, WithState), with what only one kind
// has said here too.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"huddle/store"
	"huddle/store/filestore"
	"huddle/store/natsurl"
	"huddle/team"
	"huddle/teamdir"
)

// Environment variables a store command reads for its flags' defaults.
const (
	EnvStore     = "HUDDLE_STORE"
	envNATSCreds = "HUDDLE_NATS_CREDS"
	// EnvNATSCA names a PEM file of the certificate authorities a tls://
	// server's certificate is checked against (default: the system's).
	EnvNATSCA = "HUDDLE_NATS_CA"
)

// OpenTimeout bounds connecting to the store and making the team's
// streams and bucket: an unreachable server is an error, not a hang.
const OpenTimeout = 15 * time.Second

// storeSynopsis is what a store command's usage line says of the flags.
const storeSynopsis = "[--dir D | --store URL [--nats-creds F]]"

// addStoreFlags defines --store and --nats-creds on a command that runs on
// a store. Their defaults from the environment are read after parsing, not
// given to the FlagSet: the help prints a flag's default, and a store URL
// may hold a token.
func addStoreFlags(fs *flag.FlagSet) {
	fs.String("store", "", "the team's store `URL`, nats://[TOKEN@]HOST:PORT/TEAM or tls://… (checked against the system's CAs, or those of the PEM file $"+EnvNATSCA+"), instead of the team directory (default $"+EnvStore+")")
	fs.String("nats-creds", "", "a NATS credentials `file` for --store (default $"+envNATSCreds+")")
}

// flagOrEnv is the value of flag name, or of the variable env when the flag
// was not given.
func (cl *Cmdline) flagOrEnv(name, env string) string {
	if cl.FlagGiven(name) {
		return cl.fs.Lookup(name).Value.String()
	}
	return os.Getenv(env)
}

// readStoreFlags takes --store and --nats-creds into cl, and checks the URL
// before anything is done: a bad one is a usage error, credentials never
// shown.
func (cl *Cmdline) readStoreFlags() (int, bool) {
	cl.storeURL = strings.TrimSpace(cl.flagOrEnv("store", EnvStore))
	cl.natsCreds = cl.flagOrEnv("nats-creds", envNATSCreds)
	if cl.storeURL == "" {
		if cl.FlagGiven("store") {
			return cl.UsageError("--store is empty"), false
		}
		if cl.FlagGiven("nats-creds") {
			return cl.UsageError("--nats-creds goes with --store"), false
		}
		return 0, true
	}
	t, err := natsurl.ParseURL(cl.storeURL)
	if err != nil {
		return cl.UsageError("%v", err), false // redacted by ParseURL
	}
	// cl.Exit scrubs them from every error line, whatever produced it.
	cl.secrets = t.Secrets()
	return 0, true
}

// StoreSecrets are the credentials --store and --nats-creds hold: a
// runtime scrubs them from what it writes and ships.
func (cl *Cmdline) StoreSecrets() ([]string, error) {
	secrets := slices.Clone(cl.secrets)
	if cl.Remote() && cl.natsCreds != "" {
		creds, err := natsurl.CredsSecrets(cl.natsCreds)
		if err != nil {
			return nil, err
		}
		secrets = append(secrets, creds...)
	}
	return secrets, nil
}

// Remote reports whether --store names the store the team is kept in
// (NATS), rather than its team directory keeping it.
func (cl *Cmdline) Remote() bool { return cl.storeURL != "" }

// StoreName is the store URL to print: its credentials redacted.
func (cl *Cmdline) StoreName() string { return natsurl.Redact(cl.storeURL) }

// OpenStore connects to the team's store that --store names, with the
// NATS client, which only huddle-full links (Full.OpenStore): in huddle
// the command is handed over here, before it has done anything.
func (cl *Cmdline) OpenStore(ctx context.Context) (store.Store, error) {
	if cl.natsCreds != "" {
		if _, err := os.Stat(cl.natsCreds); err != nil {
			return nil, fmt.Errorf("--nats-creds: %w", err)
		}
	}
	return cl.full.OpenStore(ctx, cl.storeURL, cl.natsCreds)
}

// WithTeam runs f on the store that keeps the team, in the command's
// context (Cmdline.context): --store's, or the files store of --dir;
// either must hold a team.json, not judged here. Commands that run once
// on either kind choose it here.
func (cl *Cmdline) WithTeam(f func(ctx context.Context, st store.Store) int) int {
	return cl.WithState(NeedTeam, f)
}

// Need is what the team's state must hold before a command runs on it.
type Need int

const (
	// NeedDir: only the team directory, on a directory (traces a huddle
	// serve left need no team); nothing more of a store.
	NeedDir Need = iota
	// NeedTeam: a team.json, in the directory or the store, not judged:
	// requests can still be read and decided while it is being edited.
	NeedTeam
	// NeedTeamIfAny: a directory without a team.json is not opened, so
	// nothing is made there, and f gets a nil store (huddle call outside
	// a team); a store is opened as it is.
	NeedTeamIfAny
	// NeedTeamAndLocal: NeedTeam, and with a store --dir too: where this
	// machine keeps what no store holds (huddle serve's executions), made
	// when missing.
	NeedTeamAndLocal
	// NeedNone: nothing; a directory is made when missing, and with a
	// store --dir is taken as where the team comes from (huddle init).
	NeedNone
)

// WithState is WithTeam with what the state must hold said by n.
func (cl *Cmdline) WithState(n Need, f func(ctx context.Context, st store.Store) int) int {
	if cl.Remote() {
		return cl.withStoreFor(n, f)
	}
	check := requireTeam
	switch n {
	case NeedNone:
		check = func(string) error { return nil }
	case NeedDir:
		check = requireDir
	case NeedTeamIfAny:
		if _, err := os.Stat(team.ConfigPath(cl.Dir)); errors.Is(err, os.ErrNotExist) {
			ctx, stop := cl.context()
			defer stop()
			return f(ctx, nil)
		}
	}
	if err := check(cl.Dir); err != nil {
		return cl.Fail(err)
	}
	ctx, stop := cl.context()
	defer stop()
	st, err := filestore.Open(cl.Dir)
	if err != nil {
		return cl.Fail(err)
	}
	defer st.Close()
	return f(ctx, st)
}

// requireDir checks that dir is a directory.
func requireDir(dir string) error {
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return fmt.Errorf("no team directory %s", dir)
	}
	return nil
}

// storedTeam checks that st holds a team.json, as requireTeam does of a
// directory: without judging it.
func storedTeam(ctx context.Context, st store.Store) error {
	_, err := st.Config(ctx, store.ConfigTeam)
	if errors.Is(err, store.ErrNotFound) {
		return errors.New("no team in the store (run 'huddle init --store URL')")
	}
	if err != nil {
		return fmt.Errorf("team: %w", err)
	}
	return nil
}

// where names what keeps one of the team's files for a person, and what
// one record of it is: a line of the file in --dir, or an entry of the
// store (its URL redacted).
func (cl *Cmdline) where(file string) (where, unit string) {
	if cl.Remote() {
		return "the store " + cl.StoreName(), "entry"
	}
	return filepath.Join(cl.Dir, file), "line"
}

// TeamPlace names where the team is for a person: --dir, or the store's
// URL, redacted.
func (cl *Cmdline) TeamPlace() string {
	if cl.Remote() {
		return cl.StoreName()
	}
	return cl.Dir
}

// notYet ends "NAME has no log" for a file the team has none of yet: the
// path of the file in --dir, or the store.
func (cl *Cmdline) notYet(file string) string {
	if cl.Remote() {
		return " in the store yet"
	}
	return " yet: " + filepath.Join(cl.Dir, file)
}

// LocalDir is where this machine keeps what no store holds (huddle
// serve's executions, the status histories replay reads): --dir on a
// team directory; none on a store, which refuses --dir but to huddle
// serve (NeedTeamAndLocal) and init (NeedNone).
func (cl *Cmdline) LocalDir() string {
	if cl.Remote() {
		return ""
	}
	return cl.Dir
}

// WithStore runs f on the store, in the command's context, and
// closes it. The team is in the store: a --dir given too is refused
// rather than silently not read.
func (cl *Cmdline) WithStore(f func(ctx context.Context, st store.Store) int) int {
	return cl.withStoreFor(NeedDir, f)
}

// withStoreFor is WithStore with what the store must hold said by n
// (WithState), and --dir taken as this machine's own directory when n
// says so.
func (cl *Cmdline) withStoreFor(n Need, f func(ctx context.Context, st store.Store) int) int {
	switch {
	case n == NeedTeamAndLocal:
		if err := os.MkdirAll(cl.Dir, teamdir.DirMode); err != nil {
			return cl.Fail(fmt.Errorf("local directory: %w", err))
		}
	case n == NeedNone:
	case cl.FlagGiven("dir"):
		return cl.UsageError("--dir and --store: the team is in the store; drop --dir")
	}
	ctx, stop := cl.context()
	defer stop()
	st, err := cl.OpenStore(ctx)
	if err != nil {
		return cl.Fail(err)
	}
	defer st.Close()
	if n == NeedTeam || n == NeedTeamAndLocal {
		if err := storedTeam(ctx, st); err != nil {
			return cl.Fail(err)
		}
	}
	return f(ctx, st)
}
