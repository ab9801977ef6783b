package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestNoArgumentsPrintsUsageAndExitsZero(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Main(nil, &out, &errOut); code != exitOK {
		t.Fatalf("exit %d, want 0", code)
	}
	if !strings.Contains(out.String(), "usage: huddle <command>") {
		t.Fatalf("usage missing: %q", out.String())
	}
	for _, c := range commands {
		if !c.hidden && !strings.Contains(out.String(), c.name) {
			t.Errorf("usage does not list %q", c.name)
		}
	}
}

func TestUnknownCommandIsAUsageError(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Main([]string{"frobnicate"}, &out, &errOut); code != exitUsage {
		t.Fatalf("exit %d, want 2", code)
	}
	if got := errOut.String(); !strings.Contains(got, `unknown command "frobnicate"`) || strings.Count(got, "\n") != 1 {
		t.Fatalf("want one clear line, got %q", got)
	}
}
