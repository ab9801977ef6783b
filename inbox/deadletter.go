package inbox

import (
	"encoding/json"
	"os"
	"time"

	"huddle/protocol"
	"huddle/teamdir"
)

// maxRaw bounds the raw text kept with a dead letter.
const maxRaw = 4 << 10

// WriteDeadLetter records rejected input: where it came from (a path relative
// to the team directory, or a member's name), its offset, why, and the raw
// bytes cut to 4 KiB.
func WriteDeadLetter(teamDir, source string, offset int64, reason string, raw []byte) error {
	if len(raw) > maxRaw {
		raw = raw[:maxRaw]
	}
	b, err := json.Marshal(protocol.DeadLetterLine{
		TS: protocol.FormatTime(time.Now()), Source: source, Offset: offset,
		Reason: reason, Raw: string(raw),
	})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(teamDir, teamdir.DirMode); err != nil {
		return err
	}
	return teamdir.AppendLine(teamdir.DeadLetterPath(teamDir), append(b, '\n'))
}
