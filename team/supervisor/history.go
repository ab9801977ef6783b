package supervisor

import (
	"encoding/json"
	"fmt"

	"huddle/protocol"
	"huddle/team"
	"huddle/teamdir"
)

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
		c := team.StatusChange{TS: r.Since, Status: r.Status, Activity: r.Activity}
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
