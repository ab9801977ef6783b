package claudeteam

import "strconv"

// Task is one file of ROOT/tasks/<team>/ (N.json).
type Task struct {
	ID          string         `json:"id"`
	Subject     string         `json:"subject"`
	Description string         `json:"description,omitempty"`
	ActiveForm  string         `json:"activeForm,omitempty"`
	Status      string         `json:"status,omitempty"`
	Owner       string         `json:"owner,omitempty"`
	BlockedBy   []string       `json:"blockedBy,omitempty"`
	Metadata    map[string]any `json:"metadata,omitempty"`
}

// Internal reports a task Claude Code keeps to track a teammate, not a
// work item.
func (t *Task) Internal() bool {
	v, _ := t.Metadata["_internal"].(bool)
	return v
}

// taskOrder sorts numeric ids as numbers, then the rest as text.
func taskOrder(a, b string) bool {
	na, ea := strconv.Atoi(a)
	nb, eb := strconv.Atoi(b)
	switch {
	case ea == nil && eb == nil:
		return na < nb
	case ea == nil:
		return true
	case eb == nil:
		return false
	}
	return a < b
}
