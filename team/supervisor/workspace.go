package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"huddle/protocol"
	"huddle/store"
	"huddle/team"
	"huddle/teamdir"
	"huddle/worktree"
)

// A coding teammate whose workspace has a worktree runs in it
// (docs/worktrees.md): the runtime makes it, or finds it again after a
// restart or a crash, before the teammate's process or loop starts there.
// Setup and teardown run only after the lead approved that exact script;
// until then the member waits in starting, its inbox unread.

// setupNote is what the runtime keeps in a worktree's git directory of
// its setup: the script's sha256, the request that asked for it, and
// whether it ran there.
type setupNote struct {
	SHA256  string `json:"sha256"`
	Request string `json:"request,omitempty"`
	Ran     bool   `json:"ran,omitempty"`
}

const setupNoteName = "huddle-setup.json"

// prepareWorkspace makes or finds mt's worktree and points the member's
// dir at it. It says whether the member must wait for its setup (its
// script not yet run in this worktree).
func (rt *Runtime) prepareWorkspace(ctx context.Context, mt *mate, ws *team.Workspace) (gated bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	r, err := worktree.Open(ctx, ws.Repo)
	if err != nil {
		return false, fmt.Errorf("workspace: %w", err)
	}
	if ws.Base == "" {
		if ws.Base = r.Upstream(ctx, ws.Branch); ws.Base == "" {
			if ws.Base, err = r.CurrentBranch(ctx); err != nil {
				return false, fmt.Errorf("workspace: %w", err)
			}
		}
	}
	if err := ignoreRoot(r, ws.Root); err != nil {
		return false, fmt.Errorf("workspace: %w", err)
	}
	made, err := r.Ensure(ctx, ws.Path, ws.Branch, ws.Base)
	if err != nil {
		return false, fmt.Errorf("workspace: %w", err)
	}
	if made {
		copied, err := worktree.CopyIncludes(r.Dir, ws.Path, ws.Include)
		if err != nil {
			return false, fmt.Errorf("workspace: %w", err)
		}
		rt.emit(Event{"event": "worktree_made", "member": mt.spec.Name, "path": ws.Path, "branch": ws.Branch, "base": ws.Base, "included": len(copied)})
		if l, _ := team.ListWorktrees(ctx, rt.team, rt.dir, false); l != nil && l.Over() {
			rt.emit(Event{"event": "warning", "member": mt.spec.Name, "warning": fmt.Sprintf("the team's worktrees take %s, over max_disk %s: huddle worktrees prune removes the orphans", team.FormatSize(l.Total), team.FormatSize(l.Limit))})
		}
	}
	mt.ws = ws
	mt.spec.Dir = ws.Path
	if ws.Scripts() == "" || len(ws.Setup) == 0 {
		return false, nil
	}
	note, _ := readSetupNote(ctx, ws.Path)
	return !note.Ran || note.SHA256 != ws.ScriptsSum(), nil
}

// ignoreRoot keeps the main worktree's git status clean of the teammates'
// worktrees when their root is inside it: a .gitignore of "*" in the root,
// written once.
func ignoreRoot(r *worktree.Repo, root string) error {
	if !inside(r.Dir, root) {
		return nil // the root is outside the repository's working tree
	}
	if err := os.MkdirAll(root, teamdir.DirMode); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(root, ".gitignore"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = f.WriteString("# huddle's worktrees: each is a repository's worktree of its own\n*\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func readSetupNote(ctx context.Context, path string) (setupNote, error) {
	var n setupNote
	admin, err := worktree.AdminDir(ctx, path)
	if err != nil {
		return n, err
	}
	b, err := os.ReadFile(filepath.Join(admin, setupNoteName))
	if err != nil {
		return n, err
	}
	err = json.Unmarshal(b, &n)
	return n, err
}

func writeSetupNote(ctx context.Context, path string, n setupNote) error {
	admin, err := worktree.AdminDir(ctx, path)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(n)
	return teamdir.ReplaceFile(filepath.Join(admin, setupNoteName), b)
}

// awaitSetup runs the member's setup once the lead approved its script:
// at once when a script of that sha256 was approved before, else after a
// setup request the lead decides (one the last run opened is awaited
// again, not asked twice). A script refused, or whose request expired,
// fails the member's start with why.
func (mt *mate) awaitSetup(ctx context.Context) error {
	ws, rt := mt.ws, mt.rt
	sum := ws.ScriptsSum()
	note, _ := readSetupNote(ctx, ws.Path)
	if note.SHA256 != sum {
		note = setupNote{SHA256: sum}
	}
	if !team.ScriptApproved(rt.dir, sum) {
		r, err := mt.setupRequest(ctx, &note)
		if err != nil {
			return err
		}
		if err := mt.setStatus(protocol.MemberStarting, "waiting for the lead to approve the workspace's setup ("+r.ID+")"); err != nil {
			return err
		}
		err = store.Await(ctx, rt.st, store.ChangeRequest, r.ID, func() (bool, error) {
			nr, err := rt.st.Request(ctx, r.ID)
			if err != nil {
				return false, err
			}
			r = nr
			return r.Status.IsTerminal(), nil
		})
		if err != nil {
			return err
		}
		if r.Status != protocol.RequestApproved {
			return fmt.Errorf("workspace setup %s %s: %s", r.ID, r.Status, firstOf(r.Feedback, r.ResponseReason))
		}
		if err := team.RememberScript(rt.dir, sum, r.ID, r.ResolvedBy); err != nil {
			return err
		}
		rt.approveSameScript(r)
	}
	if err := mt.setStatus(protocol.MemberStarting, "running the workspace's setup"); err != nil {
		return err
	}
	logPath, err := teamdir.MemberLogPath(rt.dir, mt.spec.Name)
	if err != nil {
		return err
	}
	lf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	err = team.RunScript(ctx, ws.Path, ws.Setup, lf)
	lf.Close()
	if err != nil {
		return fmt.Errorf("workspace setup: %w", err)
	}
	note.Ran = true
	if err := writeSetupNote(ctx, ws.Path, note); err != nil {
		return err
	}
	rt.emit(Event{"event": "setup_ran", "member": mt.spec.Name, "sha256": sum})
	return nil
}

// setupRequest is the pending setup request the last run opened for this
// script, or a new one.
func (mt *mate) setupRequest(ctx context.Context, note *setupNote) (*protocol.Request, error) {
	rt, ws := mt.rt, mt.ws
	if note.Request != "" {
		if r, err := rt.st.Request(ctx, note.Request); err == nil && (r.Status == protocol.RequestPending || r.Status == protocol.RequestApproved) {
			return r, nil
		}
	}
	r := protocol.NewRequest(protocol.KindSetup, protocol.NewRequestID(protocol.KindSetup), mt.spec.Name, protocol.Lead, time.Now(), rt.team.Settings.Approval())
	r.Setup = &protocol.Setup{Script: ws.Scripts(), SHA256: ws.ScriptsSum(), Worktree: ws.Path}
	if err := rt.sh.createRequest(&r); err != nil {
		return nil, err
	}
	note.Request = r.ID
	if err := writeSetupNote(ctx, ws.Path, *note); err != nil {
		return nil, err
	}
	rt.emit(Event{"event": "request_opened", "id": r.ID, "kind": string(r.Kind), "from": r.From, "to": r.To})
	return &r, nil
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// inside reports whether path is dir or under it.
func inside(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// turnEnded is a worktree teammate's turn ending (it went idle): when its
// latest plan is approved, its change goes to the lead as a review (or is
// merged at once with auto_merge). A turn that changed nothing opens none.
func (mt *mate) turnEnded(summary string) {
	if mt.ws == nil {
		return
	}
	rt := mt.rt
	p := mt.approvedPlan()
	if p == nil {
		return // work before an approved plan is not put to review
	}
	plan := p.ID
	if !strings.HasPrefix(summary, "done: ") {
		summary = p.Plan // an llm member's "waiting for messages" says nothing of the change
	}
	ctx, cancel := context.WithTimeout(rt.ctx, time.Minute)
	defer cancel()
	r, err := team.OpenReview(ctx, rt.st, rt.team, mt.ws, plan, summary)
	if err != nil {
		rt.emit(Event{"event": "error", "member": mt.spec.Name, "error": "review: " + err.Error()})
		return
	}
	if r == nil {
		return
	}
	rt.emit(Event{"event": "request_opened", "id": r.ID, "kind": string(r.Kind), "from": r.From, "to": r.To})
	if !r.Review.Auto {
		return
	}
	m, err := team.Merge(ctx, rt.st, r.ID, "huddle (auto_merge)")
	if err != nil {
		rt.emit(Event{"event": "error", "member": mt.spec.Name, "error": "auto_merge: " + err.Error()})
		return
	}
	rt.emit(Event{"event": "request_resolved", "id": r.ID, "status": string(m.Request.Status), "by": m.Request.ResolvedBy})
}

// approveSameScript approves the other pending setup requests of the
// script r approved: the lead approved that script, by its sha256, not a
// member's run of it.
func (rt *Runtime) approveSameScript(r *protocol.Request) {
	all, err := rt.pending()
	if err != nil {
		return
	}
	for _, o := range all {
		if o.ID == r.ID || o.Kind != protocol.KindSetup || o.Setup == nil || o.Setup.SHA256 != r.Setup.SHA256 {
			continue
		}
		if nr, err := rt.sh.resolveID(o.ID, team.Resolution{Event: protocol.EventApprove, By: "huddle (the same script approved in " + r.ID + ")"}); err == nil {
			rt.emit(Event{"event": "request_resolved", "id": nr.ID, "status": string(nr.Status), "by": nr.ResolvedBy})
		}
	}
}

// expireReview ends a review at its deadline as team.ExpireReview does,
// under its repository's lock.
func (rt *Runtime) expireReview(id string) (*protocol.Request, error) {
	ctx, cancel := context.WithTimeout(rt.ctx, time.Minute)
	defer cancel()
	r, err := team.ExpireReview(ctx, rt.st, id)
	var already *store.AlreadyError
	if err != nil && !errors.As(err, &already) && ctx.Err() == nil {
		// Its repository is not here (gone, or never on this machine):
		// there is nothing to merge, and the deadline is the deadline.
		return rt.sh.resolveID(id, team.Resolution{Event: protocol.EventDeadline, By: "huddle", Text: "no review before the deadline (" + err.Error() + ")"})
	}
	return r, err
}

// approvedPlan is the member's latest plan when it is approved, else nil.
func (mt *mate) approvedPlan() *protocol.Request {
	mt.mu.Lock()
	plan := mt.lastPlan
	mt.mu.Unlock()
	if plan == "" {
		return nil
	}
	p, err := mt.rt.sh.loadRequest(plan)
	if err != nil || p.Status != protocol.RequestApproved {
		return nil
	}
	return p
}

func (mt *mate) planIsApproved() bool { return mt.approvedPlan() != nil }
