package cli

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"huddle/internal/testkit"
	"huddle/internal/testkit/files"
	"huddle/internal/testkit/natsteam"
	"huddle/internal/testtls"
	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/store"
	"huddle/store/natsserver"
	"huddle/store/natsurl"
	"huddle/store/storekinds"
	"huddle/team"
	"huddle/teamdir"
)

// The commands run on a team kept in a store of either kind
// (store/storekinds): "files", a team directory the binary is pointed at
// with --dir, and "nats", an embedded NATS server in the test process,
// reached with --store or $HUDDLE_STORE. A store the test opens on the
// same team puts in and reads back what a runtime would. A command's tests
// run once on each kind (onEachStore), with the same assertions, where the
// command behaves the same on both.

// natsToken is the token the clients of a "nats" team present: no command
// may print it.
const natsToken = "s3cr3t-crew-t0ken"

// teamOn is a team under test kept in a store of one kind, as the
// commands reach it.
type teamOn struct {
	kind string      // "files" or "nats"
	args []string    // the flags that name the team: --dir D, or --store URL
	env  string      // the variable that names it instead: HUDDLE_DIR=D, or HUDDLE_STORE=URL
	st   store.Store // a store the test opened on the same team
	dir  string      // files: the team directory
	url  string      // nats: the store URL, with natsToken in it
}

// storeKinds make an empty team of each kind store/storekinds names:
// "files" names a team directory not made yet, and the test's store opens
// once something is put in it.
var storeKinds = map[string]func(t *testing.T) *teamOn{
	"files": func(t *testing.T) *teamOn {
		dir := filepath.Join(t.TempDir(), ".huddle")
		return &teamOn{kind: "files", args: []string{"--dir", dir}, env: "HUDDLE_DIR=" + dir, dir: dir}
	},
	"nats": func(t *testing.T) *teamOn {
		url := natsteam.New(t, natsToken)
		return &teamOn{kind: "nats", args: []string{"--store", url}, env: "HUDDLE_STORE=" + url, url: url, st: natsteam.Open(t, url)}
	},
}

// onEachStore runs f as a subtest on a fresh team of each kind, holding
// configs (name → data, as store.PutConfig names them); nothing runs it.
func onEachStore(t *testing.T, configs map[string]string, f func(t *testing.T, on *teamOn)) {
	t.Helper()
	eachStore(t, func(t *testing.T, on *teamOn) {
		if on.st == nil {
			if err := os.MkdirAll(on.dir, 0o700); err != nil {
				t.Fatal(err)
			}
			on.st = files.Open(t, on.dir)
		}
		natsteam.PutConfigs(t, on.st, configs)
	}, f)
}

// onEachDemoStore runs f as a subtest on the demo team, put in a fresh
// store of each kind by huddle init.
func onEachDemoStore(t *testing.T, f func(t *testing.T, on *teamOn)) {
	t.Helper()
	eachStore(t, initDemo, f)
}

// demoOn is the demo team in a fresh store of kind, for a test of what
// only that kind does.
func demoOn(t *testing.T, kind string) *teamOn {
	t.Helper()
	return newTeamOn(t, kind, initDemo)
}

// initDemo puts the demo team in on's store with huddle init.
func initDemo(t *testing.T, on *teamOn) {
	t.Helper()
	args := []string{"init"}
	if on.kind == "nats" {
		args = append(args, "--dir", filepath.Join(t.TempDir(), "none")) // no team.json there: the demo template
	}
	on.must(t, args...)
}

// eachStore runs f on a team of each kind that put filled, the kinds at
// once: each has its own team, directory or server, and its own huddle
// processes.
func eachStore(t *testing.T, put func(t *testing.T, on *teamOn), f func(t *testing.T, on *teamOn)) {
	t.Helper()
	for _, kind := range slices.Sorted(maps.Keys(storekinds.Open)) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			f(t, newTeamOn(t, kind, put))
		})
	}
}

// newTeamOn is a team in a fresh store of kind that put filled.
func newTeamOn(t *testing.T, kind string, put func(t *testing.T, on *teamOn)) *teamOn {
	t.Helper()
	empty, ok := storeKinds[kind]
	if !ok {
		t.Fatalf("no team of the kind %q to point huddle at (storeKinds)", kind)
	}
	on := empty(t)
	put(t, on)
	if on.st == nil {
		on.st = files.Open(t, on.dir)
	}
	return on
}

// dirOn is the team directory dir as a team on the files store, for a
// test of what only a directory has.
func dirOn(t *testing.T, dir string) *teamOn {
	t.Helper()
	return &teamOn{kind: "files", args: []string{"--dir", dir}, env: "HUDDLE_DIR=" + dir, dir: dir, st: files.Open(t, dir)}
}

// teamConfig is tm as the configuration onEachStore puts.
func teamConfig(tm team.Team) map[string]string {
	b, _ := json.Marshal(tm)
	return map[string]string{store.ConfigTeam: string(b)}
}

// huddle runs the binary on the team, the flags that name it after args
// (before a --, after which all is text), clocks printed in UTC; no output
// may hold the store's token.
func (on *teamOn) huddle(t *testing.T, args ...string) cliResult {
	t.Helper()
	at := len(args)
	if i := slices.Index(args, "--"); i >= 0 {
		at = i
	}
	return on.noToken(t, huddleIn(t, t.TempDir(), utc, slices.Concat(args[:at], on.args, args[at:])...), args...)
}

// huddleFlagsFirst is huddle with the flags that name the team right
// after the command, before its flags and arguments.
func (on *teamOn) huddleFlagsFirst(t *testing.T, cmd string, args ...string) cliResult {
	t.Helper()
	all := slices.Concat([]string{cmd}, on.args, args)
	return on.noToken(t, huddleIn(t, t.TempDir(), utc, all...), all...)
}

// must is huddle for a command that must succeed.
func (on *teamOn) must(t *testing.T, args ...string) cliResult {
	t.Helper()
	return on.huddle(t, args...).wantOK(t, args...)
}

// huddleEnv runs the binary with the team named by the environment
// ($HUDDLE_DIR or $HUDDLE_STORE), not by a flag.
func (on *teamOn) huddleEnv(t *testing.T, args ...string) cliResult {
	t.Helper()
	return on.noToken(t, huddleIn(t, t.TempDir(), append([]string{on.env}, utc...), args...), args...)
}

func (on *teamOn) noToken(t *testing.T, r cliResult, args ...string) cliResult {
	t.Helper()
	if on.kind == "nats" && strings.Contains(r.stdout+r.stderr, natsToken) {
		t.Errorf("huddle %v shows the store's token:\nstdout %q\nstderr %q", args, r.stdout, r.stderr)
	}
	return r
}

// place is where a command says the team is: the directory, or the
// store's URL redacted.
func (on *teamOn) place() string {
	if on.kind == "nats" {
		return "the store " + natsurl.Redact(on.url)
	}
	return on.dir
}

// policy is the flags that give huddle call caller's policy: the file
// --config names on a team directory, the store's by --caller on NATS.
func (on *teamOn) policy(caller string) []string {
	if on.kind == "files" {
		return []string{"--caller", caller, "--config", filepath.Join(on.dir, store.MemberPolicyConfig(caller))}
	}
	return []string{"--caller", caller}
}

// up starts `huddle up --headless` on the team, running members (on a team
// directory its one runtime runs every member, under runtime.lock), and
// waits until it has started them.
func (on *teamOn) up(t *testing.T, members string) *upOn {
	t.Helper()
	if on.kind == "nats" {
		return startUpOnWhenFree(t, on.url, members)
	}
	p := startUpWith(t, "up", "--headless", "--dir", on.dir)
	if ok, err := p.started(t); !ok {
		t.Fatalf("huddle up: %v", err)
	}
	return p
}

// untouched returns a check that nothing was written to the team since:
// on a team directory no file of it or beside it changed; in a store no
// message, record or dead letter is new.
func (on *teamOn) untouched(t *testing.T) func(what string) {
	t.Helper()
	if on.kind == "files" {
		before := testkit.Tree(t, filepath.Dir(on.dir))
		return func(what string) {
			t.Helper()
			if after := testkit.Tree(t, filepath.Dir(on.dir)); !reflect.DeepEqual(before, after) {
				t.Fatalf("%s touched files:\nbefore %v\nafter  %v", what, before, after)
			}
		}
	}
	held := func() string {
		ctx := context.Background()
		msgs, err := on.st.(store.MessageReader).Messages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		reqs, _, err := on.st.Requests(ctx)
		if err != nil {
			t.Fatal(err)
		}
		members, _, err := on.st.Members(ctx, team.LostAfter)
		if err != nil {
			t.Fatal(err)
		}
		for i := range members {
			members[i].Seen, members[i].Lost = time.Time{}, false // how long ago, not what is held
		}
		letters, _, err := on.st.DeadLetters(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal([]any{msgs, reqs, members, letters})
		return string(b)
	}
	before := held()
	return func(what string) {
		t.Helper()
		if after := held(); after != before {
			t.Fatalf("%s wrote to the store:\nbefore %s\nafter  %s", what, before, after)
		}
	}
}

// memberOn waits until member's record in st satisfies ok and returns it.
func memberOn(t *testing.T, st store.Store, member, what string, ok func(*protocol.Member) bool) *protocol.Member {
	t.Helper()
	var m *protocol.Member
	testkit.WaitFor(t, 30*time.Second, what, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ms, err := st.Member(ctx, member, team.LostAfter)
		if err == nil && ok(&ms.Member) {
			m = &ms.Member
		}
		return m != nil
	})
	return m
}

func statusIs(s protocol.MemberStatus) func(*protocol.Member) bool {
	return func(m *protocol.Member) bool { return m.Status == s }
}

// leadHears waits for a message to the lead from member whose content
// starts with prefix, in what the store holds (NATS keeps a committed
// message one purge interval, a minute, at least).
func (on *teamOn) leadHears(t *testing.T, member, prefix string) {
	t.Helper()
	testkit.WaitFor(t, 20*time.Second, "a message from "+member+" starting "+prefix, func() bool {
		for _, m := range on.messagesTo(t, protocol.Lead) {
			if m.From == member && strings.HasPrefix(m.Content, prefix) {
				return true
			}
		}
		return false
	})
}

// request is the record of request id, as the store holds it.
func (on *teamOn) request(t *testing.T, id string) *protocol.Request {
	t.Helper()
	r, err := on.st.Request(context.Background(), id)
	if err != nil {
		t.Fatalf("request %s: %v", id, err)
	}
	return r
}

// messagesTo is every message the store holds for member, in order, read
// without consuming any: while no runtime consumes the inbox, every one
// sent to it.
func (on *teamOn) messagesTo(t *testing.T, member string) []protocol.Message {
	t.Helper()
	ds, err := on.st.(store.MessageReader).Messages(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []protocol.Message
	for _, d := range ds {
		if d.Msg.To == member {
			out = append(out, d.Msg)
		}
	}
	return out
}

// putMember writes m as member m.Name's record, as its runtime would.
func (on *teamOn) putMember(t *testing.T, m protocol.Member) {
	t.Helper()
	if err := on.st.PutMember(context.Background(), &m); err != nil {
		t.Fatal(err)
	}
}

// deadLetter records dl at its own time. The files store stamps a dead
// letter with its clock: there the line is written as a runtime's
// inbox.WriteDeadLetter would have.
func (on *teamOn) deadLetter(t *testing.T, dl protocol.DeadLetterLine) {
	t.Helper()
	if on.kind == "nats" {
		if err := on.st.DeadLetter(context.Background(), dl); err != nil {
			t.Fatal(err)
		}
		return
	}
	line, _ := json.Marshal(dl)
	if err := teamdir.AppendLine(teamdir.DeadLetterPath(on.dir), append(line, '\n')); err != nil {
		t.Fatal(err)
	}
}

// spoil leaves a member's or a request's record as a torn write or a
// foreign writer would: a file, or a bucket entry, that does not decode.
func (on *teamOn) spoil(t *testing.T, kind store.ChangeKind, name string) {
	t.Helper()
	if on.kind == "files" {
		p, err := teamdir.MemberPath(on.dir, name)
		if kind == store.ChangeRequest {
			p, err = teamdir.RequestPath(on.dir, name)
		}
		if err == nil {
			err = os.WriteFile(p, []byte(`{"id": "torn`), 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	u, err := natsurl.ParseURL(on.url)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(u.Server)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, "huddle_"+u.Team)
	if err != nil {
		t.Fatal(err)
	}
	key := "member." + name
	if kind == store.ChangeRequest {
		key = "req." + name
	}
	if _, err := kv.Put(ctx, key, []byte(`{"id": "torn`)); err != nil {
		t.Fatal(err)
	}
}

// TestStoreTokenNeverShown: with a broker that wants a token, no command
// prints the token, on stdout or stderr, whether it works or fails, nor a
// wrong token it was given.
func TestStoreTokenNeverShown(t *testing.T) {
	const token, wrong = "s3cr3t-t0ken-xyz", "wr0ng-t0ken-abc"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, prefix, _, _ := startBroker(t, "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--token-file", tokenFile)
	good := strings.Replace(prefix, "TOKEN", token, 1) + "/crew"
	bad := strings.Replace(prefix, "TOKEN", wrong, 1) + "/crew"
	runs := [][]string{
		{"init", "--store", good, "--dir", filepath.Join(t.TempDir(), "none")},
		{"init", "--store", good, "--dir", filepath.Join(t.TempDir(), "none")},
		{"status", "--store", good},
		{"send", "--store", good, "reservas", "hi"},
		{"send", "--store", good, "nobody", "hi"},
		{"approve", "--store", good, "pl-nothere"},
		{"show", "--store", good, "pl-nothere"},
		{"requests", "--store", good, "--all"},
		{"traces", "--store", good, "--correlation", "corr-none"},
		{"deadletters", "--store", good},
		{"shutdown", "--store", good, "nobody"},
		{"status", "--store", bad},
		{"status", "--store", strings.TrimSuffix(good, "/crew")},
		{"status", "--store", "nats://" + token + "@127.0.0.1:1/crew"},
		{"status", "--store", good + "/x?y"},
		{"status", "--store", good, "--nats-creds", filepath.Join(t.TempDir(), "nocreds")},
		{"logs", "--store", good, "reservas"},
		{"restart", "--store", good, "reservas"},
	}
	failed := 0
	for _, args := range runs {
		r := huddle(t, args...)
		if r.code != ExitOK {
			failed++
		}
		for _, secret := range []string{token, wrong} {
			if strings.Contains(r.stdout+r.stderr, secret) {
				t.Errorf("huddle %s shows the token:\nstdout %q\nstderr %q", strings.Join(args[:1], " "), r.stdout, r.stderr)
			}
		}
		if r.code != ExitOK && strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("huddle %s failed in more than one line: %q", args[0], r.stderr)
		}
	}
	if failed != 12 {
		t.Errorf("%d of the runs failed, want 12 (the bad ones)", failed)
	}
	with := huddleIn(t, t.TempDir(), []string{"HUDDLE_STORE=" + good}, "status").wantOK(t, "status with $HUDDLE_STORE")
	if !strings.Contains(with.stdout, "reservas") {
		t.Fatalf("status with a token in $HUDDLE_STORE:\n%s", with.stdout)
	}
	// The help prints flags' defaults: the environment's URL is not one.
	for _, cmd := range []string{"status", "approve", "init"} {
		r := huddleIn(t, t.TempDir(), []string{"HUDDLE_STORE=" + good}, cmd, "--help").wantOK(t, cmd+" --help")
		if strings.Contains(r.stdout, token) || !strings.Contains(r.stdout, "(default $HUDDLE_STORE)") {
			t.Errorf("%s --help with a token in $HUDDLE_STORE:\n%s", cmd, r.stdout)
		}
	}
}

// TestEveryTeamCommandRunsOnAStore: a command that takes a team directory
// also runs on a team kept in a store (--store, $HUDDLE_STORE): none would
// read a directory while the team lives in NATS. A new one fails here until
// it runs on a store too.
func TestEveryTeamCommandRunsOnAStore(t *testing.T) {
	for _, c := range commands {
		if c.teamDir && !c.store {
			t.Errorf("huddle %s takes a team directory and does not run on a store", c.name)
		}
		if c.store && !strings.Contains(c.synopsis, "--store URL") {
			t.Errorf("huddle %s runs on a store and its usage does not say so: %q", c.name, c.synopsis)
		}
	}
	// A --store after -- is text, not the flag.
	dir := demoTeam(t)
	if r := huddle(t, "send", "reservas", "--dir", dir, "--from", "data", "--", "--store"); r.code != ExitOK {
		t.Fatalf("send -- --store: exit %d, %q", r.code, r.stderr)
	}
}

// TestStoreBadURL: a bad store URL is one usage line, exit 2; a store that
// cannot be reached one failure line, exit 1.
func TestStoreBadURL(t *testing.T) {
	for _, c := range []struct{ url, want string }{
		{"http://127.0.0.1:4222/crew", "want nats://HOST:PORT/TEAM"},
		{"nats://127.0.0.1:4222", "no team"},
		{"nats://127.0.0.1:4222/a.b", "holds no dot"},
	} {
		huddle(t, "status", "--store", c.url).wantError(t, ExitUsage, c.want, "status --store "+c.url)
	}
	huddle(t, "requests", "--store", "").wantError(t, ExitUsage, "--store is empty", "--store ''")
	huddle(t, "requests", "--nats-creds", "/x").wantError(t, ExitUsage, "--nats-creds goes with --store", "--nats-creds alone")
	huddle(t, "status", "--store", "nats://127.0.0.1:1/crew").wantError(t, ExitFail, "store nats://127.0.0.1:1/crew: connect", "an unreachable store")
	huddle(t, "status", "--store", "nats://127.0.0.1:1/crew", "--dir", t.TempDir()).wantError(t, ExitUsage, "--dir and --store", "--dir with --store")
}

// TestStoreOverTLS: a tls:// store whose server certificate the team's own
// CA signed is reached with that CA in $HUDDLE_NATS_CA, and refused in one
// line without it.
func TestStoreOverTLS(t *testing.T) {
	caFile, cfg := testtls.Server(t)
	srv, err := natsserver.Start(natsserver.Options{Addr: "127.0.0.1:0", DataDir: t.TempDir(), TLS: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	url := "tls://" + srv.Addr() + "/crew"
	ri := huddleIn(t, t.TempDir(), []string{"HUDDLE_NATS_CA=" + caFile}, "init", "--store", url, "--dir", t.TempDir())
	if ri.code != ExitOK {
		t.Fatalf("init --store over TLS with the CA: exit %d\n%s", ri.code, ri.stderr)
	}
	if r := huddleIn(t, t.TempDir(), []string{"HUDDLE_NATS_CA=" + caFile}, "status", "--store", url); r.code != ExitOK || !strings.Contains(r.stdout, "reservas") {
		t.Fatalf("status --store over TLS: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := huddleIn(t, t.TempDir(), []string{"HUDDLE_NATS_CA="}, "status", "--store", url)
	if r.code != ExitFail || !strings.Contains(r.stderr, "certificate") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Fatalf("status --store over TLS without the CA: exit %d, stderr %q", r.code, r.stderr)
	}
}

// goldenFile names a golden file by name, not by the test: each kind of
// store compares its output to the same one.
type goldenFile struct {
	testing.TB
	name string
}

func (g goldenFile) Name() string { return filepath.Join("records", g.name) }

// wantGolden fails unless out is testdata/records/NAME.golden, which
// go test -update writes.
func wantGolden(t *testing.T, name, out string) {
	t.Helper()
	golden.RequireEqual(goldenFile{t, name}, out)
}

// recordsAt is when putRecords's records were made: fixed, so what the
// commands print of them is too.
var recordsAt = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// putRecords puts, as a team's runtime would, the records the golden
// tests print: reservas's pending plan pl-samesamesameX of two lines;
// data's plan pl-donedonedoneX, rejected with "smaller"; a call of
// reservas to finanzas.pagar_factura (req-1, chain corr-1) that took 5 ms;
// reservas's record, working; a dead letter of data's inbox.
func putRecords(t *testing.T, on *teamOn) {
	t.Helper()
	ctx := context.Background()
	plan := protocol.NewRequest(protocol.KindPlan, "pl-samesamesameX", "reservas", protocol.Lead, recordsAt, time.Hour)
	plan.Plan = "line one\nline two"
	done := protocol.NewRequest(protocol.KindPlan, "pl-donedonedoneX", "data", protocol.Lead, recordsAt, time.Hour)
	done.Plan = "count"
	t0 := recordsAt.Add(time.Second)
	for _, r := range []*protocol.Request{&plan, &done} {
		if err := on.st.CreateRequest(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := on.st.Decide(ctx, done.ID, store.Decision{Event: protocol.EventReject, By: protocol.Lead, Text: "smaller", At: t0}); err != nil {
		t.Fatal(err)
	}
	for _, sp := range []trace.Span{
		{Span: trace.SpanStart, TS: t0, RequestID: "req-1", CorrelationID: "corr-1", Caller: "reservas", Target: "finanzas", Action: "pagar_factura"},
		{Span: trace.SpanEnd, TS: t0.Add(5 * time.Millisecond), RequestID: "req-1", CorrelationID: "corr-1", Caller: "reservas", Target: "finanzas", Action: "pagar_factura", Status: protocol.ResultOK, DurationMS: 5},
	} {
		if err := on.st.AppendSpan(ctx, sp); err != nil {
			t.Fatal(err)
		}
	}
	on.putMember(t, protocol.Member{Name: "reservas", Runtime: "script", Status: protocol.MemberWorking, Activity: "booking", Since: t0})
	on.deadLetter(t, protocol.DeadLetterLine{TS: protocol.FormatTime(t0), Source: "inbox/data.jsonl", Offset: 7, Reason: "bad line", Raw: `{"from":"x","type":"nope"}`})
}
