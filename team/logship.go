package team

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"huddle/store"
	"huddle/teamdir"
)

// A runtime on a store writes a member's log (an exec member's stderr)
// and transcript (an llm member's turns) in its local directory, as on a
// team directory, and a shipper per file follows it and appends what is
// written to the store (store.Store.AppendLog), so that 'huddle logs
// --store' reads it from any machine. The member writes to its file and
// never waits on the store: the shipper reads behind it, and lines the
// store refuses (its server away and the connection's buffer full) are
// dropped and counted, not retried.

// shipLogs starts the shippers of the members spec names that this
// runtime runs, from where their files end now: what was there before is
// an earlier run's.
func (rt *Runtime) shipLogs(specs []MemberSpec) {
	if rt.opts.Store == nil {
		return
	}
	for _, s := range specs {
		var kind store.LogKind
		var path string
		var err error
		switch s.Runtime.Kind {
		case RuntimeExec:
			kind = store.LogStderr
			path, err = teamdir.MemberLogPath(rt.dir, s.Name)
		case RuntimeLLM:
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
		f, err := Follow(path, off)
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

// shipper appends one file's new lines to the store.
type shipper struct {
	rt     *Runtime
	member string
	kind   store.LogKind
	f      *Follower
	// dropped counts the lines the store refused since it last took some.
	dropped int
}

// run ships until ctx ends, then what was written up to then.
func (sh *shipper) run(ctx context.Context) {
	defer sh.f.Close()
	for {
		lines, err := sh.f.Next(ctx)
		sh.ship(lines)
		if ctx.Err() != nil || errors.Is(err, io.EOF) {
			last, end, _ := ReadLines(sh.f.path, sh.f.off)
			sh.f.off = end
			sh.ship(last)
			return
		}
		if err != nil {
			sh.rt.emit(Event{"event": "warning", "member": sh.member, "warning": fmt.Sprintf("%s not stored from now on: %v", sh.kind, err)})
			return
		}
	}
}

func (sh *shipper) ship(lines [][]byte) {
	if len(lines) == 0 {
		return
	}
	ctx, cancel := op()
	defer cancel()
	if err := sh.rt.opts.Store.AppendLog(ctx, sh.member, sh.kind, lines); err != nil {
		if sh.dropped == 0 {
			sh.rt.emit(Event{"event": "warning", "member": sh.member, "warning": fmt.Sprintf("%s lines not stored, dropped until the store takes them again: %v", sh.kind, err)})
		}
		sh.dropped += len(lines)
		return
	}
	if sh.dropped > 0 {
		sh.rt.emit(Event{"event": "warning", "member": sh.member, "warning": fmt.Sprintf("%d %s lines were dropped while the store was away", sh.dropped, sh.kind), "dropped": sh.dropped})
		sh.dropped = 0
	}
}
