package team

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"huddle/permit"
	"huddle/protocol"
	"huddle/store"
	"huddle/teamdir"
)

// A desk is a team whose members are agent sessions huddle did not start:
// a person's own Claude Code and Codex sessions, each asking through a
// hook command (`huddle hook claude`, `huddle hook codex`) before a tool
// use the CLI would put to them. Each question is a permission request from the session's member, decided by
// what the lead allowed for that session or by the lead, on the desk's
// screen (`huddle desk`); no runtime runs a desk, so the hook keeps the
// deadline itself.

// MakeDesk makes a desk in dir, unless a team.json is there already,
// and checks that the team there is a desk.
func MakeDesk(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("desk %s: %w", dir, err)
	}
	if _, err := os.Stat(teamdir.ConfigPath(dir)); errors.Is(err, fs.ErrNotExist) {
		b, _ := json.MarshalIndent(Team{Name: "desk", Desk: true, Members: []MemberSpec{}}, "", "  ")
		err := writeNew(dir, []InitFile{{teamdir.ConfigFile, append(b, '\n')}})
		if _, serr := os.Stat(teamdir.ConfigPath(dir)); err != nil && serr != nil {
			return err // not another hook's desk made meanwhile either
		}
	}
	t, err := Load(dir)
	if err != nil {
		return err
	}
	if !t.Desk {
		return fmt.Errorf("%s is a team, not a desk (its team.json has no \"desk\": true)", dir)
	}
	return nil
}

// DeskAsk is one question of a session at a desk.
type DeskAsk struct {
	Agent       string // the CLI: claude or codex
	Session     string // its session id
	Cwd         string // the session's working directory
	Tool        string
	Input       json.RawMessage
	Suggestions json.RawMessage
}

// DeskMember is the member a session is at a desk: the agent's name and
// the last 8 letters and digits of its session id (a Codex thread id is a
// UUIDv7, whose first 8 are a clock two sessions started in the same
// minute share; the tail of any UUID is random).
func DeskMember(agent, session string) (string, error) {
	var tail []rune
	for _, c := range strings.ToLower(session) {
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') {
			tail = append(tail, c)
		}
	}
	if len(tail) == 0 {
		return "", fmt.Errorf("session id %q has no letter or digit to name it by", Clip(session, 64))
	}
	tail = tail[max(0, len(tail)-8):]
	name := agent + "-" + string(tail)
	if err := protocol.ValidateName(name); err != nil {
		return "", err
	}
	return name, nil
}

// AskDesk puts q to the desk in st and waits up to wait for the answer:
// the request's final record. What the lead allowed for the session
// before is allowed at once (a record too); a request nobody answered in
// time is cancelled, so the agent's own prompt asks instead (cancelled
// is its status then). Every step shows on the session's member record.
func AskDesk(ctx context.Context, st store.Store, q DeskAsk, wait time.Duration) (*protocol.Request, error) {
	if q.Tool == "" {
		return nil, errors.New("the question names no tool")
	}
	if len(q.Input) > 0 && !json.Valid(q.Input) {
		return nil, errors.New("the tool's input is not JSON")
	}
	name, err := DeskMember(q.Agent, q.Session)
	if err != nil {
		return nil, err
	}
	use := permit.Use{Tool: q.Tool, Input: q.Input, Cwd: q.Cwd}
	r := PermissionRequest(protocol.NewRequestID(protocol.KindPermission), name, use, "", q.Suggestions, wait)
	summary := r.Permission.Summary
	rec := deskRecord(ctx, st, name, q)
	rec.Status, rec.Activity, rec.Since = protocol.MemberWorking, Printable(Clip("asks to use "+summary, 100)), time.Now().UTC()
	rec.Counters.Permissions++
	if err := st.PutMember(ctx, rec); err != nil {
		return nil, fmt.Errorf("member %s: %w", name, err)
	}
	if err := st.CreateRequest(ctx, &r); err != nil {
		return nil, err
	}
	final, err := deskDecide(ctx, st, &r, use, wait)
	if final != nil {
		word := map[protocol.RequestStatus]string{protocol.RequestAllowed: "allowed", protocol.RequestDenied: "denied", protocol.RequestCancelled: "left to its own prompt"}[final.Status]
		rec.Status, rec.Activity = protocol.MemberIdle, Printable(Clip(word+": "+summary, 100))
		_ = st.PutMember(context.WithoutCancel(ctx), rec) // the answer stands without it
	}
	return final, err
}

// deskRecord is the session's member record: the one the desk keeps, or
// a new one naming the session and its directory.
func deskRecord(ctx context.Context, st store.Store, name string, q DeskAsk) *protocol.Member {
	if ms, err := st.Member(ctx, name, LostAfter); err == nil {
		m := ms.Member
		return &m
	}
	return &protocol.Member{Name: name, Runtime: RuntimeExternal, Role: Printable(Clip(fmt.Sprintf("%s session %s in %s", q.Agent, q.Session, q.Cwd), 200))}
}

// deskDecide decides r by the session's allowances, else asks the lead and
// waits for the decision until wait ends.
func deskDecide(ctx context.Context, st store.Store, r *protocol.Request, use permit.Use, wait time.Duration) (*protocol.Request, error) {
	if rule, ok := sessionAllows(ctx, st, r, use); ok {
		cur, err := Settle(ctx, st, r.ID, Resolution{Event: protocol.EventApprove, By: "lead (for the session: " + rule + ")"})
		var already *store.AlreadyError
		if errors.As(err, &already) {
			return st.Request(ctx, r.ID) // the lead was quicker
		}
		return cur, err
	}
	changed := make(chan struct{}, 1)
	sub, err := st.Watch(ctx, func(c store.Change) {
		if c.Name == r.ID || c.Name == "" {
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	}, store.ChangeRequest)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Stop() }()
	if err := st.Append(ctx, protocol.Lead, PermissionAsk(r)); err != nil {
		return nil, err
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		cur, err := st.Request(ctx, r.ID)
		if err == nil && cur.Status.IsTerminal() {
			return cur, nil
		}
		select {
		case <-changed:
		case <-timer.C:
			why := fmt.Sprintf("nobody answered within %s: left to the agent's own prompt", wait)
			cur, err := Settle(context.WithoutCancel(ctx), st, r.ID, Resolution{Event: protocol.EventCancel, By: "huddle hook", Text: why})
			var already *store.AlreadyError
			if errors.As(err, &already) {
				return st.Request(context.WithoutCancel(ctx), r.ID)
			}
			return cur, err
		case <-ctx.Done():
			cur, _ := Settle(context.WithoutCancel(ctx), st, r.ID, Resolution{Event: protocol.EventCancel, By: "huddle hook", Text: "the hook was stopped: " + context.Cause(ctx).Error()})
			return cur, context.Cause(ctx)
		}
	}
}

// sessionAllows reports whether the lead allowed use for the rest of the
// session that asks q (an earlier permission of its member allowed with
// session scope, whose rule covers use), and by which rule.
func sessionAllows(ctx context.Context, st store.Store, q *protocol.Request, use permit.Use) (string, bool) {
	all, _, err := st.Requests(ctx)
	if err != nil {
		return "", false
	}
	var rules permit.Rules
	for _, r := range all {
		if r.ID != q.ID && r.Kind == protocol.KindPermission && r.From == q.From && r.Status == protocol.RequestAllowed && r.Scope == protocol.ScopeSession && r.Rule != "" {
			rules.Allow = append(rules.Allow, r.Rule)
		}
	}
	if v, rule := rules.Decide(use); v == permit.Allow {
		return rule, true
	}
	return "", false
}
