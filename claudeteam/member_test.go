package claudeteam

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/protocol"
)

// fakeMemberEnv makes the test binary play a Claude Code teammate
// (fakeMember): ROOT|TEAM|MEMBER|approve or reject.
const fakeMemberEnv = "HUDDLE_FAKE_CLAUDE_MEMBER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(fakeMemberEnv); spec != "" {
		os.Exit(fakeMember(strings.Split(spec, "|")))
	}
	os.Exit(m.Run())
}

// fakeMember polls its inbox as Claude Code's InboxPoller does, marks what
// it read as read (under the lock), and answers the first shutdown_request
// with shutdown_approved (or shutdown_rejected) in team-lead's inbox.
func fakeMember(args []string) int {
	root, teamName, me, verdict := args[0], args[1], args[2], args[3]
	mine := InboxPath(root, teamName, me)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case <-deadline:
			fmt.Fprintln(os.Stderr, "fake member: no shutdown request")
			return 1
		case <-tick.C:
		}
		var asked string
		err := claudeRewrite(mine, func(es []map[string]any) []map[string]any {
			for _, e := range es {
				if e["read"] == true {
					continue
				}
				e["read"] = true
				text, _ := e["text"].(string)
				if p, ok := parsePayload(text); ok && p.Type == typeShutdownRequest && asked == "" {
					asked = p.id()
				}
			}
			return es
		})
		if err != nil || asked == "" {
			continue // being written: read again at the next poll
		}
		answer := map[string]any{"type": "shutdown_approved", "requestId": asked, "from": me, "timestamp": Stamp(time.Now()), "paneId": "in-process", "backendType": "in-process"}
		if verdict == "reject" {
			answer = map[string]any{"type": "shutdown_rejected", "requestId": asked, "from": me, "reason": "mid-refactor", "timestamp": Stamp(time.Now())}
		}
		b, _ := json.Marshal(answer)
		e := Entry{From: me, Text: string(b), Timestamp: Stamp(time.Now())}
		if err := claudeRewrite(InboxPath(root, teamName, LeadName), func(es []map[string]any) []map[string]any {
			var m map[string]any
			eb, _ := json.Marshal(e)
			_ = json.Unmarshal(eb, &m)
			return append(es, m)
		}); err != nil {
			fmt.Fprintln(os.Stderr, "fake member:", err)
			return 1
		}
		return 0
	}
}

func startFakeMember(t *testing.T, root, teamName, member, verdict string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fakeMemberEnv+"="+strings.Join([]string{root, teamName, member, verdict}, "|"))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

func TestShutdownFromHuddleAnsweredByTheMember(t *testing.T) {
	for _, verdict := range []string{"approve", "reject"} {
		t.Run(verdict, func(t *testing.T) {
			root := t.TempDir()
			writeConfig(t, root, "alpha", "alice")
			o := observe(t, root, "alpha")
			member := startFakeMember(t, root, "alpha", "alice", verdict)
			id, err := leadAsksShutdown(t.Context(), root, "alpha", "alice", "work is done", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(id, "shutdown-") || !strings.HasSuffix(id, "@alice") {
				t.Errorf("id %q, want Claude Code's shutdown-<ms>@alice", id)
			}
			if err := member.Wait(); err != nil {
				t.Fatalf("the fake member: %v", err)
			}
			want := protocol.RequestApproved
			if verdict == "reject" {
				want = protocol.RequestRejected
			}
			testkit.WaitFor(t, 20*time.Second, "the shutdown resolved", func() bool {
				r := request(o.Last(), id)
				return r != nil && r.Status == want
			})
			s := o.Last()
			r := request(s, id)
			if r.Kind != protocol.KindShutdown || r.From != LeadName || r.To != "alice" || r.Reason != "work is done" || r.ResolvedBy != "alice" {
				t.Errorf("request %+v", r)
			}
			alice := memberOf(s, "alice")
			if verdict == "approve" && alice.Status != protocol.MemberStopped {
				t.Errorf("alice %+v, want stopped", alice)
			}
			if verdict == "reject" && (alice.Status != protocol.MemberWorking || r.ResponseReason != "mid-refactor") {
				t.Errorf("alice %+v, request %+v: want working, mid-refactor", alice, r)
			}
			// The member flipped the read flag of huddle's request: still one
			// message, not two.
			n := 0
			for _, m := range s.Snapshot.Messages {
				if m.Msg.Type == protocol.TypeShutdownRequest {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d shutdown requests shown, want 1", n)
			}
		})
	}
}
