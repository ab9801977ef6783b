package team

import (
	"encoding/json"
	"fmt"
	"time"

	"huddle/protocol"
	"huddle/teamdir"
)

// StatusChange is one line of members/<name>.history.jsonl: a status a
// member moved to, when, and what it was doing or why it ended.
type StatusChange struct {
	TS       time.Time             `json:"ts"`
	Status   protocol.MemberStatus `json:"status"`
	Activity string                `json:"activity,omitempty"`
	Error    string                `json:"error,omitempty"`
}

// appendStatusHistory appends the status rec has just moved to, after
// the moves in earlier, if any (the same member's, oldest first), in one
// write.
func appendStatusHistory(dir string, rec *protocol.Member, earlier ...*protocol.Member) error {
	path, err := teamdir.StatusHistoryPath(dir, rec.Name)
	if err != nil {
		return err
	}
	var lines []byte
	for _, r := range append(earlier, rec) {
		c := StatusChange{TS: r.Since, Status: r.Status, Activity: r.Activity}
		if r.Status == protocol.MemberCrashed {
			c.Error = r.Error
		}
		b, err := json.Marshal(c)
		if err != nil {
			return err
		}
		lines = append(append(lines, b...), '\n')
	}
	if err := teamdir.AppendLine(path, lines); err != nil {
		return fmt.Errorf("status history of %s: %w", rec.Name, err)
	}
	return nil
}

// recordMove appends the status rec has just moved to, for a move made
// outside setStatusIf (a member's first record, an external member's
// report, a stale record stopped); a failure is said in the events.
func (rt *Runtime) recordMove(rec *protocol.Member) {
	if err := appendStatusHistory(rt.dir, rec); err != nil {
		rt.emit(Event{"event": "error", "member": rec.Name, "error": err.Error()})
	}
}

// ReadStatusHistory returns the last n status changes of member name,
// oldest first (all of them when n <= 0). Lines that are not a change (a
// torn last line after a crash) are skipped.
func ReadStatusHistory(dir, name string, n int) ([]StatusChange, error) {
	path, err := teamdir.StatusHistoryPath(dir, name)
	if err != nil {
		return nil, err
	}
	off := int64(0)
	if n > 0 {
		if off, err = TailStart(path, int64(n)*512); err != nil {
			return nil, err
		}
	}
	lines, _, err := ReadLines(path, off)
	if err != nil {
		return nil, err
	}
	out := make([]StatusChange, 0, len(lines))
	for _, l := range lines {
		var c StatusChange
		if json.Unmarshal(l, &c) == nil && c.Status != "" {
			out = append(out, c)
		}
	}
	if n > 0 && len(out) > n {
		out = out[len(out)-n:]
	}
	return out, nil
}
