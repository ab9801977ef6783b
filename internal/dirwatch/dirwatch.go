// Package dirwatch shares one fsnotify watch per directory among the
// followers of files in it. The kernel lets a user hold only so many
// inotify instances (fs.inotify.max_user_instances, 128 by default): a
// watch per followed file ran out with a team of some hundred members.
package dirwatch

import (
	"errors"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Set is a set of shared directory watches; the zero Set is ready.
type Set struct {
	// Pace, when above zero, is the least time between two handings-out
	// of a directory's events, for a follower that shows what changed
	// (a screen) rather than acts on it: an event is handed out at once,
	// with those the watch read with it, and then none for a Pace.
	// Meanwhile the watch reads nothing: the kernel keeps the events, and
	// one read takes them all. Set it before the first Follow.
	Pace time.Duration

	mu   sync.Mutex
	dirs map[string]*dir
}

// dir is the one watch of a directory and the subscriptions on its files.
type dir struct {
	name string
	w    *fsnotify.Watcher
	pace time.Duration
	stop chan struct{} // closed before w, so that a resting run ends
	done chan struct{}

	mu sync.Mutex
	// subs are the subscriptions by the path they follow: an event wakes
	// those of its file, not a walk over every follower of the directory.
	subs map[string][]*Sub
}

// Sub is one follower of a file: Changed holds a wake when the file
// changed or events were lost, Err an error of the watch; neither is ever
// waited on by the watch (one pending says the same).
type Sub struct {
	path    string
	set     *Set
	dir     *dir
	changed chan struct{}
	moved   atomic.Bool // the name was created, removed or renamed, or events lost, since Moved
	err     atomic.Pointer[error]
	once    sync.Once
}

// Follow subscribes to the changes of path, watching its directory if no
// one in the set does yet. Close the Sub when done.
func (s *Set) Follow(path string) (*Sub, error) {
	path = filepath.Clean(path)
	name := filepath.Dir(path)
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dirs[name]
	if d == nil {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			return nil, err
		}
		if err := w.Add(name); err != nil {
			w.Close()
			return nil, err
		}
		if s.dirs == nil {
			s.dirs = map[string]*dir{}
		}
		d = &dir{name: name, w: w, pace: s.Pace, stop: make(chan struct{}), done: make(chan struct{}), subs: map[string][]*Sub{}}
		s.dirs[name] = d
		go d.run()
	}
	sub := &Sub{path: path, set: s, dir: d, changed: make(chan struct{}, 1)}
	sub.moved.Store(true) // nothing is known of the file yet
	d.mu.Lock()
	// A slice, not a set: a file has one follower or two, and a thousand
	// inboxes' followers cost a map each otherwise.
	d.subs[path] = append(d.subs[path], sub)
	d.mu.Unlock()
	return sub, nil
}

// Changed is woken when the file changed, events were lost or the watch
// failed (Err), and closed once the Sub is closed. A thousand followers
// hold one channel each and nothing else.
func (sub *Sub) Changed() <-chan struct{} { return sub.changed }

// Moved says whether, since it last said, the name was created, removed
// or renamed, or events were lost, rather than only written: a reader
// keeping the file open checks the name still points to it only then.
func (sub *Sub) Moved() bool { return sub.moved.Swap(false) }

// Err takes the error of the watch, other than lost events, that woke
// Changed since it was last taken, if one did.
func (sub *Sub) Err() error {
	if p := sub.err.Swap(nil); p != nil {
		return *p
	}
	return nil
}

// Close ends the subscription; the last one of a directory stops its
// watch.
func (sub *Sub) Close() error {
	var err error
	sub.once.Do(func() {
		s, d := sub.set, sub.dir
		s.mu.Lock()
		defer s.mu.Unlock()
		d.mu.Lock()
		d.subs[sub.path] = slices.DeleteFunc(d.subs[sub.path], func(x *Sub) bool { return x == sub })
		if len(d.subs[sub.path]) == 0 {
			delete(d.subs, sub.path)
		}
		last := len(d.subs) == 0
		close(sub.changed) // under d.mu: no wake sends to it after
		d.mu.Unlock()
		if last {
			delete(s.dirs, d.name)
			close(d.stop)
			err = d.w.Close()
			<-d.done
		}
	})
	return err
}

// run hands the watch's events to the subscriptions until it is closed;
// a paced one (Set.Pace) rests after each burst.
func (d *dir) run() {
	defer close(d.done)
	rest := time.NewTimer(time.Hour)
	rest.Stop()
	defer rest.Stop()
	for {
		if ok, _ := d.next(wait); !ok {
			return
		}
		if d.pace <= 0 {
			continue
		}
		// What the watch read with that event is handed out with it: the
		// reader, readied by the handing out, runs at the yield and
		// offers its next event at once, until it has read all the
		// kernel held and waits for more.
		for {
			runtime.Gosched()
			ok, quiet := d.next(poll)
			if !ok {
				return
			}
			if quiet {
				break
			}
		}
		rest.Reset(d.pace)
		select {
		case <-rest.C:
		case <-d.stop:
			return
		}
	}
}

// wait and poll say how next takes an event: waiting for one, or only
// one ready now.
const (
	wait = false
	poll = true
)

// next hands out the watch's next event or error. It says false once the
// watch is closed, and quiet when it polls and none is ready.
func (d *dir) next(polling bool) (ok, quiet bool) {
	var (
		ev    fsnotify.Event
		err   error
		open  bool
		isErr bool
	)
	if polling {
		select {
		case <-d.stop:
			return false, false
		case ev, open = <-d.w.Events:
		case err, open = <-d.w.Errors:
			isErr = true
		default:
			return true, true
		}
	} else {
		select {
		case <-d.stop:
			return false, false
		case ev, open = <-d.w.Events:
		case err, open = <-d.w.Errors:
			isErr = true
		}
	}
	switch {
	case !open:
		return false, false
	case !isErr:
		d.tell(filepath.Clean(ev.Name), ev.Op != fsnotify.Write, nil)
	case errors.Is(err, fsnotify.ErrEventOverflow):
		d.tell("", true, nil) // events were lost: every follower looks again
	default:
		d.tell("", true, err)
	}
	return true, false
}

// tell wakes the subscriptions on path ("": all), or gives them err.
func (d *dir) tell(path string, moved bool, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if path != "" {
		d.wake(d.subs[path], moved, nil)
		return
	}
	for _, subs := range d.subs {
		d.wake(subs, true, err)
	}
}

// wake wakes subs, or gives them err; it never waits. The caller holds
// d.mu.
func (d *dir) wake(subs []*Sub, moved bool, err error) {
	for _, sub := range subs {
		if moved {
			sub.moved.Store(true)
		}
		if err != nil {
			sub.err.Store(&err)
		}
		select {
		case sub.changed <- struct{}{}:
		default:
		}
	}
}
