package team

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"huddle/protocol"
	"huddle/store"
	"huddle/worktree"
)

// WorktreeInfo is one worktree of the team as huddle worktrees lists it.
type WorktreeInfo struct {
	Member string `json:"member"`
	Branch string `json:"branch"`
	Base   string `json:"base,omitempty"` // the branch it tracks
	Path   string `json:"path"`
	Repo   string `json:"repo"`
	Size   int64  `json:"size"`
	Ahead  int    `json:"ahead"`
	Behind int    `json:"behind"`
	// InUse: a member of team.json works in it (an orphan is not).
	InUse bool `json:"in_use"`
	// Missing: git knows it but its directory is gone.
	Missing bool `json:"missing,omitempty"`
	// Unmerged are its branch's commits its base does not hold; Dirty
	// what it holds that no commit does: what removing it would lose.
	Unmerged []worktree.Commit `json:"unmerged,omitempty"`
	Dirty    []string          `json:"dirty,omitempty"`
}

// WorktreeList is every worktree of a team, with what they take together
// and the limit team.json sets.
type WorktreeList struct {
	Worktrees []WorktreeInfo `json:"worktrees"`
	Total     int64          `json:"total"`
	Limit     int64          `json:"limit,omitempty"`
}

// Over says whether the worktrees take more than the limit.
func (l *WorktreeList) Over() bool { return l.Limit > 0 && l.Total > l.Limit }

// ListWorktrees lists the worktrees of team t kept in dir: those on a
// branch huddle/<team>/… of every repository team.json names, in use or
// orphaned, with their size and how their branch stands against its base.
// Unmerged and Dirty are read only when detail is set (prune needs them;
// a listing does not).
func ListWorktrees(ctx context.Context, t *Team, dir string, detail bool) (*WorktreeList, error) {
	limit, _ := ParseSize(t.maxDisk())
	inUse := map[string]bool{} // path
	repos := map[string]bool{}
	for _, w := range t.Worktrees(dir) {
		inUse[w.Path] = true
		repos[w.Repo] = true
	}
	if t.WorkspaceDefaults != nil && t.WorkspaceDefaults.Repo != "" {
		w := mergeSpecs(t.WorkspaceDefaults, nil)
		repos[absUnder(dir, w.Repo)] = true
	}
	for _, m := range t.Members {
		if m.Workspace != nil && m.Workspace.Repo != "" {
			repos[absUnder(dir, m.Workspace.Repo)] = true
		}
	}
	out := &WorktreeList{Limit: limit, Worktrees: []WorktreeInfo{}}
	seen := map[string]bool{} // a repository named twice (two paths into it)
	var errs []error
	for _, path := range slices.Sorted(maps.Keys(repos)) {
		r, err := worktree.Open(ctx, path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if seen[r.Common] {
			continue
		}
		seen[r.Common] = true
		infos, err := repoWorktrees(ctx, r, t.Name, inUse, detail)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out.Worktrees = append(out.Worktrees, infos...)
	}
	for _, w := range out.Worktrees {
		out.Total += w.Size
	}
	return out, errors.Join(errs...)
}

func (t *Team) maxDisk() string {
	if t.WorkspaceDefaults == nil {
		return ""
	}
	return t.WorkspaceDefaults.MaxDisk
}

func absUnder(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	d, err := filepath.Abs(dir)
	if err != nil {
		d = dir
	}
	return filepath.Join(d, p)
}

// repoWorktrees lists r's worktrees of team: one git process for the
// worktrees, one for every branch's track, and the sizes walked in
// parallel.
func repoWorktrees(ctx context.Context, r *worktree.Repo, teamName string, inUse map[string]bool, detail bool) ([]WorktreeInfo, error) {
	prefix := BranchPrefix(teamName)
	es, err := r.List(ctx)
	if err != nil {
		return nil, err
	}
	tracks, err := r.Tracks(ctx, prefix)
	if err != nil {
		return nil, err
	}
	var infos []WorktreeInfo
	for _, e := range es {
		if !strings.HasPrefix(e.Branch, prefix) {
			continue
		}
		tr := tracks[e.Branch]
		infos = append(infos, WorktreeInfo{
			Member: strings.TrimPrefix(e.Branch, prefix), Branch: e.Branch, Base: tr.Base, Path: e.Path, Repo: r.Dir,
			Ahead: tr.Ahead, Behind: tr.Behind, InUse: inUse[e.Path] && !e.Prunable, Missing: e.Prunable,
		})
	}
	var g errgroup.Group
	g.SetLimit(8)
	var mu sync.Mutex
	for i := range infos {
		g.Go(func() error {
			w := &infos[i]
			if w.Missing {
				return nil
			}
			n, err := worktree.Size(w.Path)
			if err != nil {
				return err
			}
			base := w.Base
			var unmerged []worktree.Commit
			var dirty []string
			if detail {
				if base != "" {
					if unmerged, err = r.Unmerged(ctx, base, w.Branch); err != nil {
						return err
					}
				}
				if dirty, err = worktree.Dirty(ctx, w.Path); err != nil {
					return err
				}
			}
			mu.Lock()
			w.Size, w.Unmerged, w.Dirty = n, unmerged, dirty
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return infos, nil
}

// Loses says what removing w would lose, for a person to confirm: its
// unmerged commits and its files no commit holds; "" when nothing.
func (w *WorktreeInfo) Loses() string {
	var parts []string
	if n := len(w.Unmerged); n > 0 {
		cs := make([]string, 0, n)
		for _, c := range w.Unmerged {
			cs = append(cs, c.String())
		}
		parts = append(parts, fmt.Sprintf("%d unmerged commit(s): %s", n, strings.Join(cs, "; ")))
	}
	if n := len(w.Dirty); n > 0 {
		parts = append(parts, fmt.Sprintf("%d uncommitted file(s): %s", n, strings.Join(w.Dirty, ", ")))
	}
	return strings.Join(parts, "; ")
}

// RemoveWorktree removes w's worktree and deletes its branch. The caller
// has had what it loses confirmed (Loses).
func RemoveWorktree(ctx context.Context, w *WorktreeInfo) error {
	r, err := worktree.Open(ctx, w.Repo)
	if err != nil {
		return err
	}
	return r.Remove(ctx, w.Path, w.Branch)
}

// CancelReviewsOf cancels the pending reviews of w's branch: the worktree
// and branch are gone, and with them what a merge would have taken.
func CancelReviewsOf(ctx context.Context, st store.Store, w *WorktreeInfo) error {
	live, _, err := st.LiveRequests(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range live {
		if r.Kind != protocol.KindReview || r.Status != protocol.RequestPending || r.Review == nil || r.Review.Branch != w.Branch || r.Review.Worktree != w.Path {
			continue
		}
		if _, err := Settle(ctx, st, r.ID, Resolution{Event: protocol.EventCancel, By: "huddle", Text: "its worktree and branch were removed"}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
