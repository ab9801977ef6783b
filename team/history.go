package team

import (
	"encoding/json"
	"huddle/protocol"
	"huddle/teamdir"
	"time"
)

// StatusChange is one line of members/<name>.history.jsonl: a status a
// member moved to, when, and what it was doing or why it ended.
type StatusChange struct {
	TS       time.Time             `json:"ts"`
	Status   protocol.MemberStatus `json:"status"`
	Activity string                `json:"activity,omitempty"`
	Error    string                `json:"error,omitempty"`
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
