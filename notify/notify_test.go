package notify

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/protocol"
	"huddle/team"
	"huddle/team/view"
)

func plan(id, from, text string) protocol.Request {
	r := protocol.NewRequest(protocol.KindPlan, id, from, protocol.Lead, time.Now(), time.Minute)
	r.Plan = text
	return r
}

func snapshot(reqs []protocol.Request, members ...protocol.Member) view.Snapshot {
	s := view.Snapshot{Team: &team.Team{Name: "crew"}, Requests: reqs}
	for _, m := range members {
		s.Members = append(s.Members, view.MemberView{Record: m})
	}
	return s
}

func TestParseKinds(t *testing.T) {
	for in, want := range map[string]string{"": "plan,permission,crash", "all": "plan,permission,crash", "off": "",
		"plan": "plan", " crash , plan,crash": "crash,plan"} {
		got, err := ParseKinds(in)
		if err != nil || strings.Join(got, ",") != want {
			t.Errorf("ParseKinds(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseKinds("plan,coffee"); err == nil || !strings.Contains(err.Error(), `"coffee"`) {
		t.Errorf("ParseKinds of an unknown kind: %v", err)
	}
}

// TestWatcherTellsEachOnce: a pending request to the lead and a crash are
// told once each, whatever the snapshots that repeat them; a decided
// request, a request between teammates and an unwanted kind never; a new
// crash of the same member is told again.
func TestWatcherTellsEachOnce(t *testing.T) {
	w := NewWatcher([]string{"plan", KindCrash})
	p := plan("pl-000000000001", "ana", "\n  Migrate the ledger\nthen index it")
	decided := plan("pl-000000000002", "bo", "old")
	decided.Status = protocol.RequestApproved
	perm := protocol.NewRequest(protocol.KindPermission, "pm-000000000003", "cy", protocol.Lead, time.Now(), time.Minute)
	perm.Permission = &protocol.Permission{Tool: "Bash", Summary: "rm -rf /"}
	between := plan("pl-000000000004", "ana", "x")
	between.To = "bo"
	crash := protocol.Member{Name: "bo", Status: protocol.MemberCrashed, Since: time.Now(), Error: "exit status 3\x1b[31m"}
	got := w.New(snapshot([]protocol.Request{p, decided, perm, between}, crash))
	if len(got) != 2 || got[0].ID != p.ID || got[0].Line != "Migrate the ledger" || got[0].Show != "huddle show "+p.ID ||
		got[0].Title() != "plan from ana" || got[1].Kind != KindCrash || got[1].Line != "exit status 3[31m" || got[1].Team != "crew" {
		t.Fatalf("first snapshot told %+v", got)
	}
	if again := w.New(snapshot([]protocol.Request{p, decided, perm}, crash)); len(again) != 0 {
		t.Fatalf("told again: %+v", again)
	}
	crash.Since = crash.Since.Add(time.Minute)
	if again := w.New(snapshot(nil, crash)); len(again) != 1 || again[0].Kind != KindCrash {
		t.Fatalf("a second crash: %+v", again)
	}
	if off := NewWatcher(nil).New(snapshot([]protocol.Request{p}, crash)); len(off) != 0 {
		t.Fatalf("no kinds told %+v", off)
	}
}

func TestTerminalSequences(t *testing.T) {
	e := Event{Kind: "plan", Member: "ana", Line: "a; b", Show: "huddle show pl-1"}
	got := Terminal(e)
	want := "\x1b]9;huddle: plan from ana: a, b — huddle show pl-1\a\x1b]777;notify;huddle: plan from ana;a, b — huddle show pl-1\a\a"
	if got != want {
		t.Fatalf("Terminal = %q\nwant      %q", got, want)
	}
}

// receiver is a loopback webhook that records what it was posted, and
// fails the first fail posts.
type receiver struct {
	mu    sync.Mutex
	posts []*http.Request
	body  []string
	fail  int
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail > 0 {
		r.fail--
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	r.posts = append(r.posts, req)
	r.body = append(r.body, string(b))
}

func TestWebhookNtfyAndJSON(t *testing.T) {
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	e := Event{Key: "pl-1", Kind: "plan", Team: "crew", Member: "ana", ID: "pl-1", Line: "Migrate", Show: "huddle show pl-1", At: time.Now()}
	if err := (Webhook{URL: srv.URL + "/huddle"}).Send(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	if err := (Webhook{URL: srv.URL + "/hook", JSON: true}).Send(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	p := rc.posts[0]
	if p.Method != http.MethodPost || p.URL.Path != "/huddle" || p.Header.Get("Title") != "huddle: plan from ana" || p.Header.Get("Tags") != "huddle,plan" ||
		rc.body[0] != "Migrate — huddle show pl-1" {
		t.Fatalf("ntfy post: %s %s %v %q", p.Method, p.URL, p.Header, rc.body[0])
	}
	var j map[string]any
	if err := json.Unmarshal([]byte(rc.body[1]), &j); err != nil || rc.posts[1].Header.Get("Content-Type") != "application/json" ||
		j["member"] != "ana" || j["kind"] != "plan" || j["id"] != "pl-1" || j["line"] != "Migrate" || j["show"] != "huddle show pl-1" || j["title"] != "plan from ana" || j["team"] != "crew" {
		t.Fatalf("json post: %v %q", rc.posts[1].Header, rc.body[1])
	}
}

// TestWebhookErrorsHideTheToken: a failing webhook's error names it
// without its password or query token.
func TestWebhookErrorsHideTheToken(t *testing.T) {
	rc := &receiver{fail: 1}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	u := strings.Replace(srv.URL, "http://", "http://user:hunter2@", 1) + "/t?auth=tk_s3cret"
	err := Webhook{URL: u}.Send(context.Background(), Event{Kind: "plan"})
	if err == nil || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "tk_s3cret") || !strings.Contains(err.Error(), "503") {
		t.Fatalf("error %v", err)
	}
	err = Webhook{URL: "http://user:hunter2@127.0.0.1:1/t?auth=tk_s3cret"}.Send(context.Background(), Event{Kind: "plan"})
	if err == nil || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "tk_s3cret") {
		t.Fatalf("error %v", err)
	}
}

// flaky is a channel that fails its first n sends.
type flaky struct {
	mu   sync.Mutex
	n    int
	sent []Event
}

func (f *flaky) Name() string { return "flaky" }
func (f *flaky) Send(_ context.Context, e Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n > 0 {
		f.n--
		return errors.New("down")
	}
	f.sent = append(f.sent, e)
	return nil
}

// TestSenderRetriesAndSaysFailuresOnce: a send that fails is tried again
// with backoff; a channel that keeps failing is said once, and once again
// when it works; Notify never blocks.
func TestSenderRetriesAndSaysFailuresOnce(t *testing.T) {
	defer func(d time.Duration) { sendFirst = d }(sendFirst)
	sendFirst = 10 * time.Millisecond
	f := &flaky{n: sendTries + 1} // the first event fails all its tries, the second its first
	var mu sync.Mutex
	var warnings []string
	s := Start(context.Background(), []Channel{f}, func(w string) { mu.Lock(); warnings = append(warnings, w); mu.Unlock() })
	defer s.Close()
	s.Notify(Event{Key: "a"})
	s.Notify(Event{Key: "b"})
	testkit.WaitFor(t, 30*time.Second, "the second event sent", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.sent) == 1
	})
	mu.Lock()
	defer mu.Unlock()
	if len(warnings) != 2 || !strings.Contains(warnings[0], "fail") || !strings.Contains(warnings[1], "work again") {
		t.Fatalf("warnings %q", warnings)
	}
	if f.sent[0].Key != "b" {
		t.Fatalf("sent %+v", f.sent)
	}
}

// TestDesktopRunsNotifySend: the desktop channel runs notify-send with the
// event's title and body as arguments, never through a shell; a failing
// notify-send is an error that says what it printed.
func TestDesktopRunsNotifySend(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "args")
	script := filepath.Join(dir, "notify-send")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" > "+out+"\n[ \"$3\" != 'huddle: fail from x' ] || { echo 'no session bus' >&2; exit 1; }\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	d, ok := FindDesktop()
	if !ok || d.Path != script {
		t.Fatalf("FindDesktop = %+v, %v", d, ok)
	}
	if err := d.Send(context.Background(), Event{Kind: "plan", Member: "ana", Line: "$(touch pwned); `x`", Show: "huddle show pl-1"}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	if string(b) != "--app-name=huddle\n--\nhuddle: plan from ana\n$(touch pwned); `x` — huddle show pl-1\n" {
		t.Fatalf("notify-send got %q", b)
	}
	if err := d.Send(context.Background(), Event{Kind: "fail", Member: "x"}); err == nil || !strings.Contains(err.Error(), "no session bus") {
		t.Fatalf("a failing notify-send: %v", err)
	}
}
