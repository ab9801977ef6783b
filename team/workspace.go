package team

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"huddle/worktree"
)

// WorkspaceSpec is team.json's "workspace", at the team's level or a
// member's (a member's fields override the team's): where a coding
// teammate works. With Worktree on, it works on its own branch
// huddle/<team>/<member>, made from Base, in its own git worktree under
// Root, and its change reaches Base only through a review
// (docs/worktrees.md).
type WorkspaceSpec struct {
	// Repo is the git repository (a directory in it), relative to the
	// team directory or absolute.
	Repo string `json:"repo,omitempty"`
	// Base is the branch the work starts from and is merged into; unset,
	// the branch the repository has checked out when the worktree is made.
	Base string `json:"base,omitempty"`
	// Worktree gives the member a worktree and branch of its own.
	Worktree *bool `json:"worktree,omitempty"`
	// Root is where the worktrees are made, as Root/<team>/<member>
	// (default: the team directory's worktrees/).
	Root string `json:"root,omitempty"`
	// Include are globs of files git ignores (".env") copied from the
	// repository into a new worktree.
	Include []string `json:"include,omitempty"`
	// Setup runs once in a new worktree, Teardown before one is removed:
	// shell command lines (sh -c), each only after the lead approved that
	// exact script (its sha256 is remembered).
	Setup    []string `json:"setup,omitempty"`
	Teardown []string `json:"teardown,omitempty"`
	// Merge is how a reviewed change reaches Base: "merge" (a fast-forward
	// when it can, else a merge commit; the default), "ff" (fast-forward
	// only) or "rebase" (the branch rebased onto Base, then
	// fast-forwarded).
	Merge string `json:"merge,omitempty"`
	// AutoMerge merges a change without waiting for the lead's review.
	AutoMerge *bool `json:"auto_merge,omitempty"`
	// MaxDisk bounds what the team's worktrees take ("20GiB", "500MB");
	// past it huddle warns. Read at the team's level only.
	MaxDisk string `json:"max_disk,omitempty"`
}

// Merge modes of a workspace.
const (
	MergeMerge  = "merge"
	MergeFF     = "ff"
	MergeRebase = "rebase"
)

// Workspace is a member's workspace resolved: the team's and the
// member's specs merged, every path absolute.
type Workspace struct {
	Team, Member string
	Repo         string // absolute
	Base         string // "" until the worktree is made: the repository's branch then
	Root         string // absolute
	Path         string // Root/<team>/<member>
	Branch       string // huddle/<team>/<member>
	Include      []string
	Setup        []string
	Teardown     []string
	Merge        string
	AutoMerge    bool
}

// BranchPrefix is the prefix of the branches of team's worktrees.
func BranchPrefix(teamName string) string { return "huddle/" + teamName + "/" }

// WorktreeRoot is where team's worktrees are made by default: the team
// directory's worktrees/.
func WorktreeRoot(dir string) string { return filepath.Join(dir, "worktrees") }

// Workspace is member's workspace in team t kept in dir; false when the
// member works in place (no workspace with worktree on).
func (t *Team) Workspace(dir, member string) (*Workspace, bool) {
	m, ok := t.Member(member)
	if !ok {
		return nil, false
	}
	spec := mergeSpecs(t.WorkspaceDefaults, m.Workspace)
	if spec.Worktree == nil || !*spec.Worktree {
		return nil, false
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return filepath.Clean(p)
		}
		d, err := filepath.Abs(dir)
		if err != nil {
			d = dir
		}
		return filepath.Join(d, p)
	}
	root := WorktreeRoot(abs("."))
	if spec.Root != "" {
		root = abs(spec.Root)
	}
	w := &Workspace{
		Team: t.Name, Member: member, Repo: abs(spec.Repo), Base: spec.Base, Root: root,
		Path: filepath.Join(root, t.Name, member), Branch: BranchPrefix(t.Name) + member,
		Include: spec.Include, Setup: spec.Setup, Teardown: spec.Teardown, Merge: spec.Merge,
		AutoMerge: spec.AutoMerge != nil && *spec.AutoMerge,
	}
	if w.Merge == "" {
		w.Merge = MergeMerge
	}
	return w, true
}

// Worktrees are the resolved workspaces of every member of t that has a
// worktree, in the roster's order.
func (t *Team) Worktrees(dir string) []*Workspace {
	var out []*Workspace
	for _, m := range t.Members {
		if w, ok := t.Workspace(dir, m.Name); ok {
			out = append(out, w)
		}
	}
	return out
}

// Scripts is the workspace's setup and teardown as one text, the one a
// lead approves; "" when it has neither.
func (w *Workspace) Scripts() string {
	if len(w.Setup) == 0 && len(w.Teardown) == 0 {
		return ""
	}
	var b strings.Builder
	if len(w.Setup) > 0 {
		b.WriteString("setup:\n")
		for _, c := range w.Setup {
			b.WriteString("  " + c + "\n")
		}
	}
	if len(w.Teardown) > 0 {
		b.WriteString("teardown:\n")
		for _, c := range w.Teardown {
			b.WriteString("  " + c + "\n")
		}
	}
	return b.String()
}

// ScriptsSum is the sha256 of Scripts, in hex: what an approval of them is
// remembered by.
func (w *Workspace) ScriptsSum() string {
	s := sha256.Sum256([]byte(w.Scripts()))
	return hex.EncodeToString(s[:])
}

// mergeSpecs is the team's spec with the member's fields over it.
func mergeSpecs(team, member *WorkspaceSpec) WorkspaceSpec {
	var out WorkspaceSpec
	if team != nil {
		out = *team
	}
	if member == nil {
		return out
	}
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&out.Repo, member.Repo)
	set(&out.Base, member.Base)
	set(&out.Root, member.Root)
	set(&out.Merge, member.Merge)
	if member.Worktree != nil {
		out.Worktree = member.Worktree
	}
	if member.AutoMerge != nil {
		out.AutoMerge = member.AutoMerge
	}
	if member.Include != nil {
		out.Include = member.Include
	}
	if member.Setup != nil {
		out.Setup = member.Setup
	}
	if member.Teardown != nil {
		out.Teardown = member.Teardown
	}
	return out
}

// checkWorkspaces checks the team's and each member's workspace: a
// worktree needs a repository and a team name fit for a branch; merge
// modes, includes, scripts and the disk limit must read.
func (t *Team) checkWorkspaces() error {
	if w := t.WorkspaceDefaults; w != nil {
		if err := checkWorkspaceSpec("team.json: workspace", w); err != nil {
			return err
		}
		if _, err := ParseSize(w.MaxDisk); err != nil {
			return fmt.Errorf("team.json: workspace.max_disk: %v", err)
		}
	}
	for _, m := range t.Members {
		where := fmt.Sprintf("team.json: member %q: workspace", m.Name)
		if m.Workspace != nil {
			if err := checkWorkspaceSpec(where, m.Workspace); err != nil {
				return err
			}
			if m.Workspace.MaxDisk != "" {
				return fmt.Errorf("%s.max_disk: set it in the team's workspace, not a member's", where)
			}
		}
		spec := mergeSpecs(t.WorkspaceDefaults, m.Workspace)
		if spec.Worktree == nil || !*spec.Worktree {
			continue
		}
		if spec.Repo == "" {
			return fmt.Errorf("%s.repo is required for a worktree", where)
		}
		if err := refComponent(t.Name); err != nil {
			return fmt.Errorf("team.json: name %q cannot name a branch (huddle/<team>/<member>): %v", t.Name, err)
		}
		if err := refComponent(m.Name); err != nil {
			return fmt.Errorf("%s: member name %q cannot name a branch: %v", where, m.Name, err)
		}
	}
	return nil
}

func checkWorkspaceSpec(where string, w *WorkspaceSpec) error {
	switch w.Merge {
	case "", MergeMerge, MergeFF, MergeRebase:
	default:
		return fmt.Errorf("%s.merge %q: want merge, ff or rebase", where, w.Merge)
	}
	if w.Base != "" {
		if err := refName(w.Base); err != nil {
			return fmt.Errorf("%s.base %q: %v", where, w.Base, err)
		}
	}
	for i, g := range w.Include {
		if err := worktree.ValidateInclude(g); err != nil {
			return fmt.Errorf("%s.include[%d]: %v", where, i, err)
		}
	}
	for i, c := range w.Setup {
		if strings.TrimSpace(c) == "" {
			return fmt.Errorf("%s.setup[%d]: an empty command", where, i)
		}
	}
	for i, c := range w.Teardown {
		if strings.TrimSpace(c) == "" {
			return fmt.Errorf("%s.teardown[%d]: an empty command", where, i)
		}
	}
	return nil
}

// refComponent refuses what git refuses in one component of a ref name
// (git check-ref-format) that a valid team or member name can hold.
func refComponent(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("empty")
	case strings.Contains(s, ".."):
		return fmt.Errorf("it holds \"..\"")
	case strings.HasSuffix(s, ".lock"), strings.HasSuffix(s, "."), strings.HasPrefix(s, "."):
		return fmt.Errorf("it starts with a dot or ends with a dot or .lock")
	}
	return nil
}

// refName checks a branch name: components separated by slashes.
func refName(s string) error {
	if strings.ContainsAny(s, " ~^:?*[\\\x7f") || strings.Contains(s, "@{") || strings.HasPrefix(s, "-") {
		return fmt.Errorf("not a branch name")
	}
	for _, c := range strings.Split(s, "/") {
		if err := refComponent(c); err != nil {
			return fmt.Errorf("not a branch name: %v", err)
		}
	}
	return nil
}

// ParseSize reads a size such as "20GiB", "500MB", "1.5G" or "1048576"
// (bytes); "" is 0, no limit.
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	units := []struct {
		suffix string
		mult   float64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
		{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3},
		{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}}
	mult := 1.0
	for _, u := range units {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a size such as \"20GiB\" or \"500MB\"", s)
	}
	return int64(v * mult), nil
}

// FormatSize writes n bytes for a person: "512 B", "3.4 MiB", "21 GiB".
func FormatSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	if v >= 10 {
		return fmt.Sprintf("%.0f %ciB", v, "KMGTPE"[exp])
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[exp])
}
