package agents

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"

	"huddle/team"
)

// Outcome is what one run of a CLI said, read from its JSON stream.
type Outcome struct {
	Session string // the session (Claude Code) or thread (Codex) id, to resume
	Final   string // its final answer
	// Plan is a plan the CLI put forward as such (Claude Code's ExitPlanMode
	// input, Codex's plan item); empty when it only answered in text.
	Plan      string
	TokensIn  int64
	TokensOut int64
	CostUSD   float64
	// Completed is set by the event that ends a turn well (Claude Code's
	// result, Codex's turn.completed); Failure says why the CLI itself
	// reported the turn as failed.
	Completed bool
	Failure   string
}

// maxActivity bounds an activity line: it is one roster line.
const maxActivity = 100

// oneLine is s on one line with no control character (team.Printable), cut
// to n runes with an ellipsis.
func oneLine(s string, n int) string { return team.Clip(team.Printable(s), n) }

// shortPath shows a path relative to the working directory when it is
// under it, as a person reading the roster would say it.
func shortPath(p, cwd string) string {
	if p == "" || cwd == "" || !filepath.IsAbs(p) {
		return p
	}
	if rel, err := filepath.Rel(cwd, p); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return p
}

// eventType reads the type of one line of a CLI's stream: an error when the
// line is not a JSON object with a string "type" (garbage, not an event).
func eventType(line []byte) (string, error) {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		return "", err
	}
	if head.Type == "" {
		return "", errors.New("an event without a type")
	}
	return head.Type, nil
}

// decodes reports whether line decodes into v. An event of a known type
// whose fields have shapes this adapter does not know (a newer CLI) does
// not: it is ignored, as an unknown type is.
func decodes(line []byte, v any) bool { return json.Unmarshal(line, v) == nil }
