package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"huddle/store"
	"huddle/team"
	"huddle/teamdir"
)

// A runtime on a store writes a member's log (an exec member's stderr)
// and transcript (an llm member's turns) in its local directory, as on a
// team directory, and a shipper per file follows it and appends what is
// written to the store (store.Store.AppendLog), so that 'huddle logs
// --store' reads it from any machine. The member writes to its file and
// never waits on the store: the shipper reads behind it. Lines the store
// refuses (its server away and the connection's buffer full) stay where
// they are, in the file, and the shipper reads them again every
// retryLogsEvery until the store takes them; only those still refused
// when the runtime stops are dropped, and counted.

// shipLogs starts the shippers of the members spec names that this
// runtime runs, from where their files end now: what was there before is
// an earlier run's.
func (rt *Runtime) shipLogs(specs []team.MemberSpec) {
	if rt.local {
		return // the files are the store's own
	}
	for _, s := range specs {
		var kind store.LogKind
		var path string
		var err error
		switch s.Runtime.Kind {
		case team.RuntimeExec:
			kind = store.LogStderr
			path, err = teamdir.MemberLogPath(rt.dir, s.Name)
		case team.RuntimeLLM:
			kind = store.LogTranscript
			path, err = teamdir.TranscriptPath(rt.dir, s.Name)
		default:
			continue
		}
		if err != nil {
			rt.emit(Event{"event": "warning", "member": s.Name, "warning": "log not stored: " + err.Error()})
			continue
		}
		var off int64
		if fi, err := os.Stat(path); err == nil {
			off = fi.Size()
		}
		f, err := team.Follow(path, off)
		if err != nil {
			rt.emit(Event{"event": "warning", "member": s.Name, "warning": "log not stored: " + err.Error()})
			continue
		}
		sh := &shipper{rt: rt, member: s.Name, kind: kind, f: f}
		rt.wg.Add(1)
		go func() {
			defer rt.wg.Done()
			sh.run(rt.memberCtx(rt.ctx, s.Name))
		}()
	}
}

// retryLogsEvery is how long a shipper whose lines the store refused
// waits before it reads them from its file again and offers them again.
var retryLogsEvery = 2 * time.Second

// shipper appends one file's new lines to the store.
type shipper struct {
	rt     *Runtime
	member string
	kind   store.LogKind
	f      *team.Follower
	// held counts the lines the store refused since it last took some:
	// they are in the file still, offered again.
	held int
}

// run ships until ctx ends, then what was written up to then. Lines the
// store refuses are read again from the file, retryLogsEvery later.
func (sh *shipper) run(ctx context.Context) {
	defer sh.f.Close()
	retry := time.NewTimer(retryLogsEvery)
	retry.Stop()
	defer retry.Stop()
	for {
		from := sh.f.Offset()
		lines, err := sh.f.Next(ctx)
		if !sh.ship(lines) {
			sh.f.Rewind(from) // the file holds them: read again after the wait
			retry.Reset(retryLogsEvery)
			select {
			case <-ctx.Done():
			case <-retry.C:
			}
		}
		if ctx.Err() != nil || errors.Is(err, io.EOF) {
			last, _ := sh.f.Drain()
			if !sh.ship(last) {
				sh.rt.emit(Event{"event": "warning", "member": sh.member, "warning": fmt.Sprintf("%d %s lines not stored: the store was away when the runtime stopped", sh.held, sh.kind), "dropped": sh.held})
			}
			return
		}
		if err != nil {
			sh.rt.emit(Event{"event": "warning", "member": sh.member, "warning": fmt.Sprintf("%s not stored from now on: %v", sh.kind, err)})
			return
		}
	}
}

// ship appends lines to the store and reports whether it took them.
func (sh *shipper) ship(lines [][]byte) bool {
	if len(lines) == 0 {
		return true
	}
	ctx, cancel := op()
	defer cancel()
	if !sh.rt.secrets.Empty() {
		// An exec teammate's stderr is in its file as it wrote it: what
		// leaves the machine is scrubbed.
		scrubbed := make([][]byte, len(lines))
		for i, l := range lines {
			scrubbed[i] = sh.rt.secrets.Bytes(l)
		}
		lines = scrubbed
	}
	if err := sh.rt.st.AppendLog(ctx, sh.member, sh.kind, lines); err != nil {
		if sh.held == 0 {
			sh.rt.emit(Event{"event": "warning", "member": sh.member, "warning": fmt.Sprintf("%s lines not stored yet, offered again every %s: %v", sh.kind, retryLogsEvery, err)})
		}
		sh.held = len(lines)
		return false
	}
	if sh.held > 0 {
		sh.rt.emit(Event{"event": "warning", "member": sh.member, "warning": fmt.Sprintf("%s lines stored again after the store was away (%d held)", sh.kind, sh.held), "held": sh.held})
		sh.held = 0
	}
	return true
}
