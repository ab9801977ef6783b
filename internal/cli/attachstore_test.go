package cli

import (
	"strings"
	"testing"

	"huddle/internal/testkit/natsteam"
)

// TestAttachStoreNeverShowsTheToken: huddle attach --store on a terminal,
// with the token in the URL (and then in $HUDDLE_STORE), shows the team
// and the store's address redacted, never the token, and q quits with 0.
func TestAttachStoreNeverShowsTheToken(t *testing.T) {
	const token = "s3cr3t-attach-t0ken"
	url := natsteam.New(t, token)
	natsteam.OpenCrew(t, url, true)
	for _, run := range []struct {
		env  []string
		args []string
	}{
		{nil, []string{"attach", "--store", url}},
		{[]string{"HUDDLE_STORE=" + url}, []string{"attach"}},
		{[]string{"HUDDLE_STORE=" + url}, nil}, // huddle alone attaches to the store's team
	} {
		p := startOnPTY(t, t.TempDir(), run.env, nil, run.args...)
		p.waitFor(t, "attached to the store nats://***@")
		p.waitFor(t, "alice")
		p.typeKeys(t, "q")
		if code := p.exit(t); code != ExitOK {
			t.Fatalf("huddle %v: exit %d; the terminal shows %s", run.args, code, p.outputTail())
		}
		if strings.Contains(p.output(), token) {
			t.Fatalf("huddle %v showed the token", run.args)
		}
	}
	// Refused before any screen: one line, no token.
	r := huddle(t, "attach", "--store", url, "--dir", t.TempDir())
	r.wantError(t, ExitUsage, "stdout is not a terminal", "attach --store without a terminal")
	if strings.Contains(r.stdout+r.stderr, token) {
		t.Fatalf("attach --store without a terminal showed the token: %q", r.stderr)
	}
}
