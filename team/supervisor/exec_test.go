package supervisor

import (
	"encoding/json"
	"testing"

	"huddle/protocol"
)

// TestExecLineWireForm: the Go names of an exec teammate's line are not its
// wire names; the kind of line is the JSON field "action".
func TestExecLineWireForm(t *testing.T) {
	for _, tc := range []struct {
		line protocol.ExecLine
		want string
	}{
		{protocol.ExecLine{Kind: "invoke", Target: "auditor", Name: "review", Prompt: "p", TimeoutSec: 5},
			`{"action":"invoke","target":"auditor","name":"review","prompt":"p","timeout_sec":5}`},
		{protocol.ExecLine{Kind: "shutdown_response", RequestID: "sd-1", Approve: protocol.Bool(false), Reason: "busy"},
			`{"action":"shutdown_response","request_id":"sd-1","approve":false,"reason":"busy"}`},
		{protocol.ExecLine{Kind: "status", Status: "working", Activity: "reading"},
			`{"action":"status","status":"working","activity":"reading"}`},
	} {
		b, err := json.Marshal(tc.line)
		if err != nil || string(b) != tc.want {
			t.Errorf("Marshal = %s, %v; want %s", b, err, tc.want)
		}
		var back protocol.ExecLine
		if err := json.Unmarshal([]byte(tc.want), &back); err != nil || back.Kind != tc.line.Kind {
			t.Errorf("Unmarshal(%s) = %+v, %v", tc.want, back, err)
		}
	}
}
