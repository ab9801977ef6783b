package natsstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"huddle/protocol"
	"huddle/store"
	"huddle/store/natsurl"
)

// Options tune a store. Zero values take the defaults.
type Options struct {
	// CredsFile is a NATS credentials file (JWT and seed), as the nats CLI
	// takes with --creds.
	CredsFile string
	// CAFile is a PEM file of the certificate authorities a tls:// server's
	// certificate is checked against, for a server whose certificate the
	// system's roots do not vouch for (a team's own CA). Empty: the
	// system's roots.
	CAFile string
	// AckWait is how long a consumer's message may stay uncommitted before
	// the server hands it out again (default 30 s). A consumer that starts,
	// or whose pull or commit failed, takes back at once what was left
	// unacknowledged (reclaim), so AckWait bounds only the wait of a
	// message lost on its way to a consumer that goes on.
	AckWait time.Duration
	// MaxDeliver is how many times a message is handed out before it is
	// dead-lettered instead (default 10): one message that kills its
	// consumer every time cannot stall an inbox.
	MaxDeliver int
	// Dedupe is the window in which a message id appended twice is stored
	// once (default 10 min).
	Dedupe time.Duration
	// ReconnectWait is the pause between reconnect attempts (default 250 ms).
	ReconnectWait time.Duration
	// Name is the client's name, shown by the server (default "huddle").
	Name string
	// PurgeInterval is how often a member's consumer removes from the
	// stream what it committed (default 1 min). A cycle purges up to the
	// ack floor the cycle before read, so a committed message stays at
	// least one interval, at most two: a watch that lags reads it still.
	PurgeInterval time.Duration
	// AnswerMaxAge is how old an invocation result may get in the inbox
	// of a caller no durable consumer reads (ops, cli, an HTTP caller)
	// before a watch of that inbox deletes it (default 1 h): far longer
	// than a call waits, so only answers no one waits for anymore go.
	AnswerMaxAge time.Duration
	// DeadLetterMaxAge is how long a dead letter is kept, a TTL the
	// server enforces (default 30 days; negative: forever).
	DeadLetterMaxAge time.Duration
	// TraceMaxAge is how long a trace span is kept, the trace stream's
	// MaxAge (default 7 days; negative: forever).
	TraceMaxAge time.Duration
	// LogMaxBytes bounds the members' logs and transcripts the store
	// keeps, all together (the oldest go first). Default 0: no such
	// bound, as the server reserves a stream's MaxBytes from its storage
	// when the stream is made, and refuses the team once it has not that
	// much; LogMaxPerMember bounds each member instead.
	LogMaxBytes int64
	// LogMaxAge is how long a log line is kept (default 7 days; negative:
	// forever).
	LogMaxAge time.Duration
	// LogMaxPerMember bounds the messages (of up to 64 KiB of lines each)
	// kept of one member's log, and of its transcript (default 1000, so
	// at most 64 MiB each): a member that writes a lot pushes out its own
	// old lines, not the others'.
	LogMaxPerMember int64
}

func (o *Options) defaults() {
	if o.AckWait <= 0 {
		o.AckWait = 30 * time.Second
	}
	if o.MaxDeliver <= 0 {
		o.MaxDeliver = 10
	}
	if o.Dedupe <= 0 {
		o.Dedupe = 10 * time.Minute
	}
	if o.ReconnectWait <= 0 {
		o.ReconnectWait = 250 * time.Millisecond
	}
	if o.Name == "" {
		o.Name = "huddle"
	}
	if o.PurgeInterval <= 0 {
		o.PurgeInterval = time.Minute
	}
	if o.AnswerMaxAge <= 0 {
		o.AnswerMaxAge = time.Hour
	}
	o.DeadLetterMaxAge = orDefault(o.DeadLetterMaxAge, 30*24*time.Hour)
	o.TraceMaxAge = orDefault(o.TraceMaxAge, 7*24*time.Hour)
	o.LogMaxAge = orDefault(o.LogMaxAge, 7*24*time.Hour)
	if o.LogMaxBytes <= 0 {
		o.LogMaxBytes = -1 // none
	}
	if o.LogMaxPerMember <= 0 {
		o.LogMaxPerMember = 1000
	}
}

// orDefault is d, def for zero, and zero (no limit) for a negative d.
func orDefault(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// Store is a team kept in NATS JetStream.
type Store struct {
	t    natsurl.Target
	opts Options
	nc   *nats.Conn
	js   jetstream.JetStream
	kv   jetstream.KeyValue
	// inbox is the inbox stream, for its purges and deletions.
	inbox jetstream.Stream
	// logs is the members' logs stream, for the last line of one.
	logs jetstream.Stream
	n    names

	mu   sync.Mutex
	subs map[*subscription]bool
	// warn hears what consumers recover from (SetWarn).
	warn atomic.Pointer[func(member string, err error)]
}

var (
	_ store.Store             = (*Store)(nil)
	_ store.MessageReader     = (*Store)(nil)
	_ store.SpanReader        = (*Store)(nil)
	_ store.InboxWatcher      = (*Store)(nil)
	_ store.DeadLetterWatcher = (*Store)(nil)
	_ store.AnswerWatcher     = (*Store)(nil)
)

// Open connects to the server rawURL names and makes the team's streams and
// bucket when they are missing (or brings their settings up to date).
func Open(ctx context.Context, rawURL string, opts Options) (*Store, error) {
	t, err := natsurl.ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	opts.defaults()
	copts := []nats.Option{
		nats.Name(opts.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(opts.ReconnectWait),
		nats.ReconnectBufSize(8 << 20),
	}
	if opts.CredsFile != "" {
		copts = append(copts, nats.UserCredentials(opts.CredsFile))
	}
	if opts.CAFile != "" {
		copts = append(copts, nats.RootCAs(opts.CAFile))
	}
	nc, err := nats.Connect(t.Server, copts...)
	if err != nil {
		return nil, fmt.Errorf("store %s: connect: %w", natsurl.Redact(rawURL), scrub(err, t.Secrets()))
	}
	s := &Store{t: t, opts: opts, nc: nc, n: namesOf(t.Team), subs: map[*subscription]bool{}}
	if err := s.setup(ctx); err != nil {
		nc.Close()
		return nil, fmt.Errorf("store %s: %w", natsurl.Redact(rawURL), scrub(err, t.Secrets()))
	}
	return s, nil
}

// SetWarn has fn told what a consumer started from now on recovers from
// on its own (pulls or commits that fail while the server is away, and
// their end): the runtime says it as an event.
func (s *Store) SetWarn(fn func(member string, err error)) { s.warn.Store(&fn) }

func (s *Store) warnOf(member string, err error) {
	if fn := s.warn.Load(); fn != nil {
		(*fn)(member, err)
	}
}

// Team is the team the store holds.
func (s *Store) Team() string { return s.t.Team }

// Conn is the store's connection, for a caller that watches its state.
func (s *Store) Conn() *nats.Conn { return s.nc }

func (s *Store) setup(ctx context.Context) error {
	js, err := jetstream.New(s.nc)
	if err != nil {
		return err
	}
	s.js = js
	inbox, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        s.n.inboxStream,
		Description: "huddle team " + s.t.Team + ": inboxes and dead letters",
		Subjects:    []string{s.n.inboxPrefix + ">", s.n.deadLetters},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Duplicates:  s.opts.Dedupe,
		// A line of an inbox is at most protocol.MaxLine; a dead letter
		// carries at most 4 KiB of it.
		MaxMsgSize: protocol.MaxLine + 4096,
		// Dead letters carry a TTL (Options.DeadLetterMaxAge); inbox
		// messages none: they leave when consumed (retention.go).
		AllowMsgTTL: true,
	})
	if err != nil {
		return fmt.Errorf("inbox stream: %w", err)
	}
	s.inbox = inbox
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        s.n.traceStream,
		Description: "huddle team " + s.t.Team + ": trace spans",
		Subjects:    []string{s.n.traces},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		MaxMsgSize:  protocol.MaxLine + 4096,
		MaxAge:      s.opts.TraceMaxAge,
	}); err != nil {
		return fmt.Errorf("trace stream: %w", err)
	}
	logs, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:              s.n.logStream,
		Description:       "huddle team " + s.t.Team + ": members' logs and transcripts",
		Subjects:          []string{s.n.logPrefix + ">"},
		Retention:         jetstream.LimitsPolicy,
		Storage:           jetstream.FileStorage,
		Discard:           jetstream.DiscardOld,
		MaxMsgSize:        maxLogBatch,
		MaxBytes:          s.opts.LogMaxBytes,
		MaxAge:            s.opts.LogMaxAge,
		MaxMsgsPerSubject: s.opts.LogMaxPerMember,
	})
	if err != nil {
		return fmt.Errorf("logs stream: %w", err)
	}
	s.logs = logs
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      s.n.bucket,
		Description: "huddle team " + s.t.Team + ": requests, decisions, members, leases, configuration",
		History:     1,
		Storage:     jetstream.FileStorage,
		// Per-key TTLs (the leases) need limit markers.
		LimitMarkerTTL: time.Second,
	})
	if err != nil {
		return fmt.Errorf("bucket: %w", err)
	}
	s.kv = kv
	return nil
}

// Close stops every consumer and watch, then closes the connection.
func (s *Store) Close() error {
	s.mu.Lock()
	subs := make([]*subscription, 0, len(s.subs))
	for sub := range s.subs {
		subs = append(subs, sub)
	}
	s.mu.Unlock()
	var errs []error
	for _, sub := range subs {
		errs = append(errs, sub.Stop())
	}
	if err := s.nc.Drain(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		s.nc.Close()
	}
	return errors.Join(errs...)
}

func (s *Store) track(sub *subscription, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if on {
		s.subs[sub] = true
	} else {
		delete(s.subs, sub)
	}
}

// names are the team's streams, subjects and bucket.
type names struct {
	inboxStream, traceStream, logStream, bucket string
	inboxPrefix, deadLetters, traces, logPrefix string
}

func namesOf(team string) names {
	return names{
		inboxStream: "huddle_" + team + "_inbox",
		traceStream: "huddle_" + team + "_traces",
		logStream:   "huddle_" + team + "_logs",
		bucket:      "huddle_" + team,
		inboxPrefix: "huddle." + team + ".inbox.",
		deadLetters: "huddle." + team + ".deadletter",
		traces:      "huddle." + team + ".traces",
		logPrefix:   "huddle." + team + ".logs.",
	}
}

// token turns a member name, request id or configuration name into one
// subject token, key part or consumer name: a dot (a NATS separator)
// becomes "=", which no name or id holds, so the mapping is one to one.
func token(name string) string { return strings.ReplaceAll(name, ".", "=") }

func (n names) inbox(member string) string { return n.inboxPrefix + token(member) }

func durable(member string) string { return "inbox_" + token(member) }
