package team

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"huddle/protocol"
	"huddle/teamdir"
)

// DeadLetter is one refused input of deadletter.jsonl, read for a person:
// when it was refused, where it came from, whose it was and who caused it,
// and why. Its JSON is what `huddle deadletters --json` prints; every key
// is always there ("" or 0 when not known).
type DeadLetter struct {
	At time.Time `json:"at"`
	// Source is where the input was read: inbox/<member>.jsonl,
	// exec:<member> for a line an exec member wrote on its stdout, or
	// restart/<member> for a restart the runtime refused.
	Source string `json:"source"`
	// Member is whose inbox or stdout it came through, or who was to be
	// restarted.
	Member string `json:"member"`
	// By is who caused it: the sender of a refused message ("from"), the
	// exec member that wrote the line, or who asked for the restart; ""
	// when the input does not say.
	By string `json:"by"`
	// MessageID and Type are the refused message's id and type, the exec
	// line's action, or "restart"; "" when the input is not one.
	MessageID string `json:"message_id"`
	Type      string `json:"type"`
	Offset    int64  `json:"offset"` // where in the source (logical offset of the inbox, or of the stdout)
	Reason    string `json:"reason"`
	Raw       string `json:"raw"` // the refused input, cut to 4 KiB
}

// Caused reports whether the dead letter concerns member: it caused it, or
// it came through member's inbox or stdout.
func (d *DeadLetter) Caused(member string) bool { return d.By == member || d.Member == member }

// parseDeadLetter reads one line, and who caused it from its source and
// raw input.
func parseDeadLetter(line []byte) (DeadLetter, bool) {
	var l protocol.DeadLetterLine
	if err := json.Unmarshal(bytes.TrimSpace(line), &l); err != nil || l.Source == "" {
		return DeadLetter{}, false
	}
	d := DeadLetter{Source: l.Source, Offset: l.Offset, Reason: l.Reason, Raw: l.Raw}
	d.At, _ = time.Parse(time.RFC3339Nano, l.TS) // zero when not a time
	var raw struct {
		ID     string `json:"id"`
		Type   string `json:"type"`
		From   string `json:"from"`
		Action string `json:"action"`
		By     string `json:"by"` // a restart request's
	}
	_ = json.Unmarshal([]byte(l.Raw), &raw) // not JSON (or cut): nothing more is known
	switch {
	case strings.HasPrefix(l.Source, "exec:"):
		d.Member = strings.TrimPrefix(l.Source, "exec:")
		d.By, d.Type = d.Member, raw.Action
	case strings.HasPrefix(l.Source, teamdir.InboxDir+"/") && strings.HasSuffix(l.Source, ".jsonl"):
		d.Member = strings.TrimSuffix(strings.TrimPrefix(l.Source, teamdir.InboxDir+"/"), ".jsonl")
		d.By, d.MessageID, d.Type = raw.From, raw.ID, raw.Type
	case strings.HasPrefix(l.Source, teamdir.RestartDir+"/"):
		d.Member = strings.TrimPrefix(l.Source, teamdir.RestartDir+"/")
		d.By, d.Type = raw.By, "restart"
	}
	return d, true
}
