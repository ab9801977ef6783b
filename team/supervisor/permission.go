package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"huddle/permit"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
)

// An exec teammate's agent asks to use a tool with a permission line; the
// runtime opens a permission request and decides it at once where it can
// (the plan gate, what the lead allowed for the session, the member's
// rules in team.json), else asks the lead. Every answer, decided here or
// by the lead, reaches the process as a permission_response from the
// lead's side, and every one is a record (docs/ARCHITECTURE.md, "State
// machines"): nothing is allowed that the history does not show.

// execPermission opens the request a permission line asks for and decides
// it when no one need be asked.
func (mt *mate) execPermission(l protocol.ExecLine) error {
	name := mt.spec.Name
	switch {
	case l.RequestID == "":
		return errors.New("permission: request_id is required")
	case protocol.ValidateID(l.RequestID) != nil:
		return fmt.Errorf("permission: request_id: %v", protocol.ValidateID(l.RequestID))
	case protocol.KindOfID(l.RequestID) != protocol.KindPermission:
		return fmt.Errorf("permission: request_id %q: want pm- and 12 hex digits", l.RequestID)
	case l.Tool == "":
		return errors.New("permission: tool is required")
	case len(l.Input) > 0 && !isObject(l.Input):
		return errors.New("permission: input must be a JSON object")
	}
	use := permit.Use{Tool: l.Tool, Input: l.Input, Cwd: mt.procDir()}
	r := team.PermissionRequest(l.RequestID, name, use, l.ToolUseID, l.Suggestions, mt.rt.team.Settings.Permission())
	if err := mt.rt.sh.createRequest(&r); err != nil {
		if errors.Is(err, store.ErrExists) {
			return fmt.Errorf("permission: request %s exists already", r.ID)
		}
		return fmt.Errorf("permission: %v", err)
	}
	mt.rt.emit(Event{"event": "request_opened", "id": r.ID, "kind": string(r.Kind), "from": r.From, "to": r.To})
	mt.count(func(c *protocol.Counters) { c.Permissions++ })
	mt.writeOrSay()
	if ev, by, why, ok := mt.decidePermission(use); ok {
		return mt.settlePermission(&r, ev, by, why)
	}
	if err := mt.rt.sh.appendTo(protocol.Lead, team.PermissionAsk(&r)); err != nil {
		return fmt.Errorf("permission: %v", err)
	}
	return nil
}

// decidePermission is what the runtime decides of a use without asking:
// the plan gate denies anything but reading while a plan of the member is
// not approved; a deny rule of team.json denies; what the lead allowed for
// the session, or an allow rule, allows; anything else is asked (ok
// false), and so is a use an ask rule names.
func (mt *mate) decidePermission(use permit.Use) (ev protocol.RequestEvent, by, why string, ok bool) {
	if gated, plan := mt.planGated(); gated && !permit.ReadOnly(use.Tool) {
		return protocol.EventReject, "huddle (plan gate)", fmt.Sprintf("plan %s is not approved: nothing may change before the lead approves it", plan), true
	}
	var rules permit.Rules
	if mt.spec.Permissions != nil {
		rules = *mt.spec.Permissions
	}
	verdict, rule := rules.Decide(use)
	switch verdict {
	case permit.Deny:
		return protocol.EventReject, "rule " + rule, fmt.Sprintf("denied by the rule %s of team.json", rule), true
	case permit.Ask:
		if rule != "" {
			return "", "", "", false // an ask rule: the lead is asked even if the session allows it
		}
	}
	mt.mu.Lock()
	session := permit.Rules{Allow: append([]string(nil), mt.sessionRules...)}
	mt.mu.Unlock()
	if v, r := session.Decide(use); v == permit.Allow {
		return protocol.EventApprove, "lead (for the session: " + r + ")", "", true
	}
	if verdict == permit.Allow {
		return protocol.EventApprove, "rule " + rule, "", true
	}
	return "", "", "", false
}

// planGated reports whether a plan of the member awaits approval, or was
// rejected or expired and not yet replaced by an approved one.
func (mt *mate) planGated() (bool, string) {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	st := mt.rec.Status
	if st == protocol.MemberAwaitingApproval || st == protocol.MemberRevising {
		return true, mt.lastPlan
	}
	return mt.lastPlan != "" && !mt.planApproved, mt.lastPlan
}

// settlePermission decides r as the runtime (a rule, the gate, the
// session) and tells the member through its inbox, as the lead's own
// decisions are told.
func (mt *mate) settlePermission(r *protocol.Request, ev protocol.RequestEvent, by, why string) error {
	nr, err := mt.rt.sh.decide(r.ID, ev, why, by)
	var already *store.AlreadyError
	switch {
	case errors.As(err, &already):
		return nil // the lead was quicker
	case err != nil:
		return fmt.Errorf("permission: %v", err)
	}
	mt.rt.emit(Event{"event": "request_resolved", "id": nr.ID, "status": string(nr.Status), "by": nr.ResolvedBy})
	return nil
}

// permissionDecided checks a permission_response from the lead for one
// of this teammate's permissions, keeps what it allows for the session,
// and hands it to the process.
func (mt *mate) permissionDecided(ctx context.Context, d store.Delivery) error {
	m := d.Msg
	name := mt.spec.Name
	r, err := mt.rt.sh.loadRequest(m.RequestID)
	if errors.Is(err, os.ErrNotExist) {
		mt.rt.deadLetter(name, d, "permission_response for unknown request "+m.RequestID)
		return nil
	}
	if err != nil {
		return err
	}
	if err := store.CheckAnswer(r, m.Type, m.From, name); err != nil {
		mt.rt.deadLetter(name, d, err.Error())
		return nil
	}
	if r.Status == protocol.RequestAllowed && r.Scope == protocol.ScopeSession && r.Rule != "" {
		mt.mu.Lock()
		if !slices.Contains(mt.sessionRules, r.Rule) {
			mt.sessionRules = append(mt.sessionRules, r.Rule)
		}
		mt.mu.Unlock()
	}
	return mt.forward(ctx, d)
}

// tellPermissionEnded tells the member whose permission huddle denied at
// its deadline that it is denied, and why.
func (rt *Runtime) tellPermissionEnded(r *protocol.Request) {
	if r.Kind != protocol.KindPermission || !rt.known(r.From) {
		return
	}
	m := protocol.NewMessage(protocol.TypePermissionResponse, protocol.Lead, r.From)
	why := fmt.Sprintf("nobody answered within %s: %s", rt.team.Settings.Permission(), r.ResponseReason)
	m.RequestID, m.Approve, m.Feedback = r.ID, protocol.Bool(false), why
	if err := rt.sh.appendTo(r.From, &m); err != nil {
		rt.emit(Event{"event": "error", "member": r.From, "error": fmt.Sprintf("telling %s that permission %s is %s: %v", r.From, r.ID, r.Status, err)})
	}
}

// permissionArrived notes a permission request in the lead's inbox: the
// runtime opened its record when the agent asked, so a line without one
// (a foreign writer's) is refused.
func (rt *Runtime) permissionArrived(d store.Delivery) error {
	m := d.Msg
	r, err := rt.sh.loadRequest(m.RequestID)
	if errors.Is(err, os.ErrNotExist) {
		rt.deadLetter(protocol.Lead, d, "permission_request for unknown request "+m.RequestID+": a member's agent asks with a permission line")
		return nil
	}
	if err != nil {
		return err
	}
	if r.Kind != protocol.KindPermission || r.From != m.From {
		rt.deadLetter(protocol.Lead, d, fmt.Sprintf("request %s is not a permission of %s", r.ID, m.From))
	}
	return nil
}

// procDir is the directory the member's process runs in, which its rules'
// paths are relative to.
func (mt *mate) procDir() string {
	if mt.proc != nil && mt.proc.cmd.Dir != "" {
		return mt.proc.cmd.Dir
	}
	return mt.rt.dir
}

func isObject(raw json.RawMessage) bool {
	return strings.HasPrefix(strings.TrimSpace(string(raw)), "{")
}

// cancelPermissions cancels the member's pending permissions when its
// process has ended: the agent that asked waits for nothing any more.
func (rt *Runtime) cancelPermissions(member string) {
	rt.cancelWhere(member+"'s agent ended before an answer", func(r *protocol.Request) bool {
		return r.Kind == protocol.KindPermission && r.From == member
	})
}
