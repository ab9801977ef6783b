package claudeteam

import "github.com/fsnotify/fsnotify"

// pump reads w's events and errors until w is closed, and for each event
// keep accepts (and each error: a rescan covers it) leaves a signal in the
// channel it returns, one at most: a burst of changes costs one fold. The
// channel is closed once w is.
//
// Whoever adds watches must not be the one reading them: fsnotify 1.10.1
// sends a watch's error from its reader while holding the lock Add takes
// (handleEvent on IN_MOVE_SELF, as when Claude Code renames a team
// .deleted-), so an Add made between two reads waits for a read that
// never comes. This goroutine always reads.
func pump(w *fsnotify.Watcher, keep func(path string) bool) <-chan struct{} {
	kick := make(chan struct{}, 1)
	signal := func() {
		select {
		case kick <- struct{}{}:
		default: // one is waiting already
		}
	}
	go func() {
		defer close(kick)
		events, errs := w.Events, w.Errors
		for events != nil || errs != nil {
			select {
			case ev, ok := <-events:
				if !ok {
					events = nil
				} else if keep(ev.Name) {
					signal()
				}
			case _, ok := <-errs:
				if !ok {
					errs = nil
				} else {
					signal() // an overflow or a watch error: the rescan covers it
				}
			}
		}
	}()
	return kick
}
