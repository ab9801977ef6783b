package supervisor

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// archiveBatch is how many final records one Archive call takes: one sync
// of the disk for each batch (teamdir.ArchiveAll).
const archiveBatch = 512

// archiver takes the final records pending finds out of the live ones, in
// the background and in batches, so that a history left live (a runtime
// killed before archiving, a foreign agent's records) never delays the
// start: the team starts, then its history moves. A failure is said once
// for each run of failures and retried with backoff.
type archiver struct {
	mu sync.Mutex
	// ids are the records to archive; true once a batch has taken them.
	ids  map[string]bool
	kick chan struct{}
}

func newArchiver() *archiver {
	return &archiver{ids: map[string]bool{}, kick: make(chan struct{}, 1)}
}

// add queues id, unless it is queued or being archived already.
func (a *archiver) add(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.ids[id]; ok {
		return
	}
	a.ids[id] = false
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// take marks up to n queued ids taken and returns them.
func (a *archiver) take(n int) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for id, taken := range a.ids {
		if len(out) == n {
			break
		}
		if !taken {
			a.ids[id] = true
			out = append(out, id)
		}
	}
	return out
}

// settle forgets ids archived, or gives them back to the queue.
func (a *archiver) settle(ids []string, archived bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, id := range ids {
		if archived {
			delete(a.ids, id)
		} else {
			a.ids[id] = false
		}
	}
}

// Backoff between failed batches: doubled each failure up to the most.
const (
	archiveRetryFirst = 100 * time.Millisecond
	archiveRetryMost  = 30 * time.Second
)

// archiveLoop archives what is queued until ctx ends; the batch under way
// is finished first, so nothing is archived once the runtime has stopped.
func (rt *Runtime) archiveLoop(ctx context.Context) {
	a := rt.arch
	wait := time.Duration(0)
	failing := false
	for {
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		ids := a.take(archiveBatch)
		if len(ids) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-a.kick:
				continue
			}
		}
		err := rt.sh.archive(ids)
		if err == nil {
			a.settle(ids, true)
			if failing {
				failing = false
				rt.emit(Event{"event": "warning", "warning": "archiving final requests works again"})
			}
			wait = 0
			continue
		}
		// What was archived is no error the next time: the whole batch
		// goes back to the queue.
		a.settle(ids, false)
		if !failing {
			failing = true
			rt.emit(Event{"event": "error", "error": fmt.Sprintf("archiving %d final requests (retried with backoff; said once): %v", len(ids), err)})
		}
		wait = min(max(2*wait, archiveRetryFirst), archiveRetryMost)
	}
}
