package trace

import (
	"encoding/json"
	"testing"
	"time"

	"huddle/protocol"
)

// jsonChain is one chain with an ok call, an error call with details that
// crossed to a remote huddle, and a call that timed out and was answered
// late, folded from the spans Start and End build.
func jsonChain(t *testing.T) Chain {
	t.Helper()
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	pay := protocol.InvocationRequest{RequestID: "req-1", CorrelationID: "corr-1", Caller: "reservas", Target: "finanzas", Action: "pagar", Prompt: "pay 42"}
	write := protocol.InvocationRequest{RequestID: "req-2", CorrelationID: "corr-1", ParentRequestID: "req-1", Caller: "finanzas", Target: "data", Action: "escribir", Hop: 1}
	read := protocol.InvocationRequest{RequestID: "req-3", CorrelationID: "corr-1", ParentRequestID: "req-1", Caller: "finanzas", Target: "auditor", Action: "leer", Hop: 1, Prompt: "balance"}
	paid, err := protocol.OK(&pay, 800, map[string]bool{"paid": true})
	if err != nil {
		t.Fatal(err)
	}
	denied := protocol.Fail(&write, 5, protocol.ErrDenied, "data is not in finanzas's allowed_targets", map[string]string{"reason": "not_allowed_target"})
	timedOut := protocol.Fail(&read, 3000, protocol.ErrTimeout, "TIMEOUT: no answer from auditor within 3s", map[string]int{"timeout_sec": 3})
	answer, _ := protocol.OK(&read, 4500, map[string]string{"summary": "70 EUR"})
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	tr := NewTraces()
	for _, s := range []Span{
		Start(pay, ms(0)),
		Start(write, ms(100)),
		End(write, denied, "http://10.0.0.2:7070", false, ms(105)),
		Start(read, ms(200)),
		End(pay, paid, "", false, ms(800)),
		End(read, timedOut, "", false, ms(3200)),
		End(read, answer, "", true, ms(4700)),
	} {
		tr.Add(s)
	}
	chains := tr.Chains()
	if len(chains) != 1 {
		t.Fatalf("%d chains", len(chains))
	}
	return chains[0]
}

// The JSON of a chain is what `huddle traces --json` prints: every field of
// every call (none left out when empty), times in the wire form (RFC 3339,
// UTC, µs) or null.
func TestChainJSON(t *testing.T) {
	got, err := json.Marshal(jsonChain(t))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"correlation_id":"corr-1","start":"2026-11-30T09:00:00.000000Z","calls":[` +
		`{"depth":0,"request_id":"req-1","correlation_id":"corr-1","parent_request_id":"","caller":"reservas","target":"finanzas","action":"pagar","hop":0,"prompt":"pay 42","start":"2026-11-30T09:00:00.000000Z","end":"2026-11-30T09:00:00.800000Z","status":"ok","duration_ms":800,"error_code":"","error_message":"","error_reason":"","result":"{\"paid\":true}","late":false,"remote":""},` +
		`{"depth":1,"request_id":"req-2","correlation_id":"corr-1","parent_request_id":"req-1","caller":"finanzas","target":"data","action":"escribir","hop":1,"prompt":"","start":"2026-11-30T09:00:00.100000Z","end":"2026-11-30T09:00:00.105000Z","status":"error","duration_ms":5,"error_code":"DENIED","error_message":"data is not in finanzas's allowed_targets","error_reason":"not_allowed_target","result":"","late":false,"remote":"http://10.0.0.2:7070"},` +
		`{"depth":1,"request_id":"req-3","correlation_id":"corr-1","parent_request_id":"req-1","caller":"finanzas","target":"auditor","action":"leer","hop":1,"prompt":"balance","start":"2026-11-30T09:00:00.200000Z","end":"2026-11-30T09:00:03.200000Z","status":"error","duration_ms":3000,"error_code":"TIMEOUT","error_message":"TIMEOUT: no answer from auditor within 3s","error_reason":"","result":"","late":true,"remote":""}]}`
	if string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// A chain with no rows, and a call with no start, still print every key.
func TestChainJSONEmptyAndUnknownTimes(t *testing.T) {
	got, err := json.Marshal([]Chain{{CorrelationID: "corr-2"}, {CorrelationID: "corr-3", Rows: []Row{{Call: &Call{RequestID: "req-9", CorrelationID: "corr-3", Status: CallRunning}}}}})
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"correlation_id":"corr-2","start":null,"calls":[]},{"correlation_id":"corr-3","start":null,"calls":[` +
		`{"depth":0,"request_id":"req-9","correlation_id":"corr-3","parent_request_id":"","caller":"","target":"","action":"","hop":0,"prompt":"","start":null,"end":null,"status":"running","duration_ms":0,"error_code":"","error_message":"","error_reason":"","result":"","late":false,"remote":""}]}]`
	if string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
