package claudeteam

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"huddle/protocol"
	"huddle/team"
	"huddle/team/view"
)

// StatusUnknown is a member huddle has seen no sign of yet: no idle
// notification, no message from it or to it. Not a state of the teammate
// state machine (docs/ARCHITECTURE.md, "State machines"), like team.StatusCorrupt.
const StatusUnknown protocol.MemberStatus = "unknown"

// sign is the latest thing huddle saw of a member, and what it says.
type sign struct {
	status   protocol.MemberStatus
	activity string
	at       time.Time
}

// roster is config.json's members with what the inboxes say of each:
//
//   - idle after an idle_notification from it;
//   - working after it sent anything else, or a message reached its inbox,
//     later than that;
//   - stopped after it approved a shutdown (until it sends again);
//   - unknown before any of these.
//
// Members with an inbox but no entry in config.json follow.
func (f *folder) roster(cfg Config, tasks []Task) []view.MemberView {
	signs := map[string]sign{}
	for _, m := range f.all() {
		for name, s := range signsOf(m) {
			old, seen := signs[name]
			if seen && old.status == protocol.MemberStopped && name != m.entry.From {
				continue // a message to a member that has shut down wakes nobody
			}
			signs[name] = s
		}
	}
	var names []string
	for _, m := range cfg.Members {
		names = append(names, m.Name)
	}
	var extra []string
	for name := range f.inboxes {
		if !slices.Contains(names, name) {
			extra = append(extra, name)
		}
	}
	slices.Sort(extra)
	var out []view.MemberView
	for _, name := range append(names, extra...) {
		out = append(out, f.memberView(name, cfg, signs[name], tasks))
	}
	return out
}

// signsOf is what one message says of its sender and its recipient.
func signsOf(m *message) map[string]sign {
	out := map[string]sign{}
	from, to := m.entry.From, m.inbox
	if !m.proto {
		out[from] = sign{protocol.MemberWorking, "sent a message to " + to, m.at}
		out[to] = sign{protocol.MemberWorking, "got a message from " + from, m.at}
		return out
	}
	p := &m.p
	switch p.Type {
	case typeIdle:
		out[from] = sign{protocol.MemberIdle, readable(p, m.entry.Text), m.at}
		return out // an idle notification wakes nobody
	case typeShutdownApproved:
		out[from] = sign{protocol.MemberStopped, "shut down: approved " + p.id(), m.at}
		return out
	case typeShutdownResponse:
		if approve, _ := shutdownAnswer(p); approve {
			out[from] = sign{protocol.MemberStopped, "shut down: approved " + p.id(), m.at}
			return out
		}
	}
	what := words(p.Type)
	out[from] = sign{protocol.MemberWorking, "sent " + what + " to " + to, m.at}
	out[to] = sign{protocol.MemberWorking, "got " + what + " from " + from, m.at}
	return out
}

// words names a protocol message for the roster's activity.
func words(typ string) string {
	switch typ {
	case typePlanRequest:
		return "a plan"
	case typePlanResponse:
		return "a plan answer"
	case typePermissionRequest:
		return "a permission request"
	case typePermissionResponse:
		return "a permission answer"
	case typeShutdownRequest:
		return "a shutdown request"
	case typeShutdownApproved, typeShutdownRejected, typeShutdownResponse:
		return "a shutdown answer"
	case typeTaskAssignment:
		return "a task"
	}
	return typ
}

func (f *folder) memberView(name string, cfg Config, s sign, tasks []Task) view.MemberView {
	rec := protocol.Member{Name: name, Runtime: "claude-code", Status: s.status, Activity: s.activity, Since: s.at}
	if cm, ok := cfg.member(name); ok {
		rec.Role = role(cm)
	}
	if rec.Status == "" {
		rec.Status, rec.Activity = StatusUnknown, "no idle notification or message seen yet"
	}
	var notes []string
	for _, t := range tasks {
		if t.Owner == name && t.Status == "in_progress" && !t.Internal() {
			what := t.ActiveForm
			if what == "" {
				what = t.Subject
			}
			notes = append(notes, fmt.Sprintf("task #%s: %s", t.ID, what))
		}
	}
	mv := view.MemberView{Spec: team.MemberSpec{Name: name, Role: rec.Role, Runtime: team.RuntimeSpec{Kind: "claude-code"}}}
	if st := f.inboxes[name]; st != nil {
		for _, r := range st.read {
			if !r {
				mv.Unread++
			}
		}
		if st.err != "" {
			notes = append([]string{"inbox: " + st.err + "; read again on the next change"}, notes...)
		}
		if st.locked != "" {
			notes = append([]string{st.locked}, notes...)
		}
	}
	if len(notes) > 0 {
		rec.Activity = strings.Join(append([]string{rec.Activity}, notes...), " · ")
	}
	mv.Record = rec
	return mv
}
