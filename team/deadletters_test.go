package team

import (
	"os"
	"testing"
	"time"

	"huddle/inbox"
	"huddle/protocol"
	"huddle/teamdir"
)

// TestReadDeadLetters: each kind of refused input is read back with who
// caused it; a line that is not a dead letter is skipped and counted, a
// line still being written is left.
func TestReadDeadLetters(t *testing.T) {
	dir := t.TempDir()
	if letters, skipped, err := dirDeadLetters(dir); letters != nil || skipped != 0 || err != nil {
		t.Fatalf("no file: %v %d %v", letters, skipped, err)
	}
	before := time.Now().Add(-time.Second)
	msg := `{"id":"m-1","type":"plan_approval_response","from":"finanzas","to":"reservas","content":"say \"yes\""}`
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(inbox.WriteDeadLetter(dir, teamdir.InboxRel("reservas"), 120, "plan_approval_response from finanzas; only the lead decides plans", []byte(msg)))
	must(inbox.WriteDeadLetter(dir, teamdir.InboxRel(protocol.Lead), 7, "not JSON", []byte("garbage")))
	must(teamdir.AppendLine(teamdir.DeadLetterPath(dir), []byte("{not a dead letter\n")))
	must(inbox.WriteDeadLetter(dir, "exec:auditor", 42, `unknown action "dance"`, []byte(`{"action":"dance"}`)))
	must(inbox.WriteDeadLetter(dir, "restart/idler", 0, "restart: idler is idle; only a stopped or crashed member is restarted", []byte(`{"at":"2026-11-30T10:00:00.000000Z","by":"lead"}`+"\n")))
	f, err := os.OpenFile(teamdir.DeadLetterPath(dir), os.O_APPEND|os.O_WRONLY, 0)
	must(err)
	_, err = f.WriteString(`{"ts":"2026-11-30T10:00:00.000000Z","source":"exec:x"`) // being written
	must(err)
	f.Close()

	letters, skipped, err := dirDeadLetters(dir)
	must(err)
	if skipped != 1 || len(letters) != 4 {
		t.Fatalf("read %d letters, skipped %d: %+v", len(letters), skipped, letters)
	}
	want := []DeadLetter{
		{Source: "inbox/reservas.jsonl", Member: "reservas", By: "finanzas", MessageID: "m-1", Type: "plan_approval_response", Offset: 120,
			Reason: "plan_approval_response from finanzas; only the lead decides plans", Raw: msg},
		{Source: "inbox/lead.jsonl", Member: "lead", Offset: 7, Reason: "not JSON", Raw: "garbage"},
		{Source: "exec:auditor", Member: "auditor", By: "auditor", Type: "dance", Offset: 42, Reason: `unknown action "dance"`, Raw: `{"action":"dance"}`},
		{Source: "restart/idler", Member: "idler", By: "lead", Type: "restart", Reason: "restart: idler is idle; only a stopped or crashed member is restarted",
			Raw: `{"at":"2026-11-30T10:00:00.000000Z","by":"lead"}` + "\n"},
	}
	for i := range want {
		got := letters[i]
		if got.At.Before(before) || got.At.After(time.Now()) {
			t.Errorf("letter %d at %v, want now", i, got.At)
		}
		got.At = time.Time{}
		if got != want[i] {
			t.Errorf("letter %d:\n got %+v\nwant %+v", i, got, want[i])
		}
	}
	if !letters[0].Caused("finanzas") || !letters[0].Caused("reservas") || letters[0].Caused("auditor") {
		t.Error("Caused: the sender and the inbox's owner, nobody else")
	}
}
