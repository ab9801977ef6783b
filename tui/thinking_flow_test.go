package tui

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"huddle/internal/testkit"
	"huddle/internal/testkit/dirrecords"
	"huddle/team"
)

// heldModel is a loopback OpenAI Chat Completions server whose first
// answer waits until release is closed: a model still thinking.
func heldModel(t *testing.T, release <-chan struct{}) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "c", "object": "chat.completion", "created": 1, "model": "fake",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": "the ledger is closed"}}},
			"usage":   map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
		})
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// TestFlowAMemberThinkingTurnsTheSpinner: an llm member whose model takes
// its time turns the spinner on the roster (the frame changes as it
// waits) and its transcript ends with how long it has waited; once the
// model answers, the answer is in the transcript and the wait is gone.
func TestFlowAMemberThinkingTurnsTheSpinner(t *testing.T) {
	t.Setenv("HUDDLE_FLOW_KEY", "sk-flow-not-a-secret")
	release := make(chan struct{})
	base := heldModel(t, release)
	dir := t.TempDir()
	b, _ := json.Marshal(team.Team{Name: "thinkers", Members: []team.MemberSpec{{
		Name: "ledger", Role: "closes the ledger",
		Runtime: team.RuntimeSpec{Kind: team.RuntimeLLM, Provider: team.ProviderOpenAI, BaseURL: base, Model: "fake",
			APIKeyEnv: "HUDDLE_FLOW_KEY", Prompt: "close the ledger"},
	}}})
	if err := os.WriteFile(team.ConfigPath(dir), b, 0o600); err != nil {
		t.Fatal(err)
	}
	tm := startTeamUI(t, dir, Options{})
	waitScreen(t, tm, "thinking")
	pressKey(tm, "1") // the roster: ledger's card and transcript
	first := waitScreenFunc(t, tm, "the wait on the model", func(s string) bool { return strings.Contains(s, "waiting for the model, ") })
	// The roster's row of ledger: its first cell after the border is the
	// spinner's frame.
	frame := func(s string) string {
		for _, l := range strings.Split(s, "\n") {
			if r := []rune(l); len(r) > 9 && string(r[2:9]) == " ledger" {
				return string(r[1])
			}
		}
		return ""
	}
	waitScreenFunc(t, tm, "the spinner turning", func(s string) bool { return frame(s) != "" && frame(s) != frame(first) })
	close(release)
	waitScreen(t, tm, "the ledger is closed")
	waitScreenFunc(t, tm, "the wait gone", func(s string) bool { return !strings.Contains(s, "waiting for the model") })
}

// TestFlowTheCardFollowsRAndM: the open card of a member follows what the
// keys did: m's message is in its mail at once, R's new run in its moves.
func TestFlowTheCardFollowsRAndM(t *testing.T) {
	dir, tm := startDemo(t) // auditor, its exec member, crashes: no huddle binary here
	waitScreen(t, tm, "crashed")
	for _, k := range []string{"1", "j", "j", "j"} { // auditor
		pressKey(tm, k)
	}
	waitScreen(t, tm, "Member auditor")
	pressKey(tm, "m")
	for _, r := range "are you there" {
		pressKey(tm, string(r))
	}
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	waitScreenFunc(t, tm, "the message in auditor's mail", func(s string) bool {
		return strings.Contains(s, "Member auditor") && strings.Contains(s, "← lead  are you there")
	})
	before, _ := dirrecords.LoadMember(dir, "auditor")
	waitScreen(t, tm, "R restart auditor")
	pressKey(tm, "R")
	testkit.WaitFor(t, 15*time.Second, "auditor run again", func() bool {
		rec, err := dirrecords.LoadMember(dir, "auditor")
		return err == nil && rec.RunID != before.RunID
	})
	// The new run crashes as the first did (no huddle binary here): the
	// card counts the time from its crash, not the first's.
	after, _ := dirrecords.LoadMember(dir, "auditor")
	waitScreenFunc(t, tm, "auditor's card on its new run", func(s string) bool {
		return strings.Contains(s, "Member auditor") && strings.Contains(s, after.Since.Local().Format("15:04:05"))
	})
}

// TestFlowFindFoldReadAndQuit: on the running demo, in a program as
// huddle up runs it: the filter narrows the messages as it is typed, over
// their words; enter on a chain's header folds it; a message's details are
// pretty JSON; q asks first, naming the pending requests a stop cancels.
func TestFlowFindFoldReadAndQuit(t *testing.T) {
	dir := t.TempDir()
	if err := team.Init(dir); err != nil {
		t.Fatal(err)
	}
	tm := startTeamUI(t, dir, Options{RunsTeam: true, Actions: dirActions(t, dir)})
	waitScreen(t, tm, "3 Traces (") // reservas's plan is on its way to the lead as a message, data has called
	pressKey(tm, "4")
	pressKey(tm, "/")
	for _, r := range "acme" {
		pressKey(tm, string(r))
	}
	waitScreenFunc(t, tm, "the messages filtered as typed, over their words", func(s string) bool {
		return strings.Contains(s, "4 Messages /acme 1 of ") && strings.Contains(s, "Book room 4 for ACME")
	})
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter}) // keep it
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter}) // the details of the message under the cursor
	waitScreenFunc(t, tm, "a message's details as pretty JSON", func(s string) bool {
		return strings.Contains(s, `    "type": "plan_approval_request",`) && strings.Contains(s, `    "from": "reservas",`)
	})
	pressKey(tm, "3")
	pressKey(tm, "g")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	waitScreen(t, tm, "▸ corr-")
	waitScreen(t, tm, "folded: enter shows them")
	pressKey(tm, "q")
	waitScreen(t, tm, "Stop the team?")
	waitScreen(t, tm, "these pending requests are cancelled:")
	waitScreenFunc(t, tm, "a pending plan named", func(s string) bool { return strings.Contains(s, "'s plan") && strings.Contains(s, "  pl-") })
	pressKey(tm, "n")
}
