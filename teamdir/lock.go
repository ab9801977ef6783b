package teamdir

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// RuntimeRecord is what runtime.lock says about the runtime that holds it,
// or that held it last: its pid and start time, and its stop time once it
// stopped cleanly. A runtime killed with kill -9 never writes Stopped.
type RuntimeRecord struct {
	PID     int        `json:"pid"`
	Started time.Time  `json:"started"`
	Stopped *time.Time `json:"stopped,omitempty"`
}

// RuntimeState is what a reader can tell about the team's runtime.
type RuntimeState struct {
	// Running is true while a runtime holds the lock.
	Running bool
	// Last is the lock file's record; zero when there is none (the team
	// never ran) or it cannot be read.
	Last RuntimeRecord
	// LastAlive is the lock file's modification time: a runtime touches it
	// every HeartbeatEvery while a request's deadline counts (every
	// HeartbeatIdleEvery otherwise) and writes it when it stops, so after a
	// kill -9 it is when the runtime was last seen alive (to within
	// HeartbeatEvery while a deadline counted).
	LastAlive time.Time
	// ByRecords says the members' records, not a lock, tell this state (a
	// team in NATS, or a directory no runtime ran yet; docs/ARCHITECTURE.md,
	// "The team directory and the store"): Running is then whether a member
	// was seen alive within LostAfter (or a runtime holds the lead's
	// lease), and LastAlive when one was last seen (team.RuntimeFromRecords).
	ByRecords bool
	LostAfter time.Duration
}

// HeartbeatEvery is how often a runtime touches runtime.lock while a
// pending request's deadline counts: the next runtime gives that request
// back the time since (team.PausedSince), exact to within this.
const HeartbeatEvery = 5 * time.Second

// HeartbeatIdleEvery is how often a runtime touches runtime.lock while no
// deadline counts: then only the "last seen alive" a reader shows uses it,
// and a minute is precise enough for a person.
const HeartbeatIdleEvery = time.Minute

// Heartbeat touches runtime.lock: the runtime that holds it is alive now.
func Heartbeat(dir string) error {
	now := time.Now()
	return os.Chtimes(RuntimeLockPath(dir), now, now)
}

// probeHold is how long LockRuntime keeps trying when the lock is taken: a
// reader's probe (ProbeRuntime) holds it for microseconds, a runtime for
// its whole life.
const probeHold = time.Second

// LockRuntime takes the team directory's runtime lock, so two runtimes never
// consume the same inboxes, and writes this process's pid and start time
// into it. The lock is held until unlock is called (or the process ends);
// unlock writes the stop time first, so readers can say when it stopped.
func LockRuntime(dir string) (unlock func(), err error) {
	p := RuntimeLockPath(dir)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, FileMode)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	if err := flockExclusive(f); err != nil {
		defer f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock %s: %w", p, err)
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB) == nil {
			// Shared: runtimes of a team in a store (ShareRuntime).
			return nil, fmt.Errorf("huddle runtimes of a team in a store keep this machine's files in %s: a team directory's runtime cannot run there meanwhile", dir)
		}
		return nil, fmt.Errorf("another huddle runtime already runs the team in %s (pid %s)", dir, holderPID(p))
	}
	rec := RuntimeRecord{PID: os.Getpid(), Started: time.Now().UTC()}
	if err := writeRecord(f, rec); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	return func() {
		stopped := time.Now().UTC()
		rec.Stopped = &stopped
		_ = writeRecord(f, rec) // informational: the release below is what counts
		f.Close()
	}, nil
}

// ShareRuntime takes the runtime lock of dir shared, for a runtime of a
// team kept in a store, which keeps only this machine's files there (the
// logs, transcripts and histories of the members it runs): any number of
// those share dir, as each runs members no other runs (their leases say
// which), while a team directory's runtime (LockRuntime), which needs dir
// alone, is kept out, and keeps them out. It writes no record: the one in
// runtime.lock is the team directory's. The lock is held until release is
// called (or the process ends).
func ShareRuntime(dir string) (release func(), err error) {
	p := RuntimeLockPath(dir)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, FileMode)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("a huddle runtime runs the team directory %s (pid %s): a runtime of a team in a store keeps its files elsewhere (--dir)", dir, holderPID(p))
		}
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	return func() { f.Close() }, nil
}

// flockExclusive takes f's exclusive lock without blocking on a runtime:
// a taken lock is tried again for probeHold, as a reader's probe may hold
// it for an instant.
func flockExclusive(f *os.File) error {
	deadline := time.Now().Add(probeHold)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ProbeRuntime tells whether a runtime holds the team's lock: a shared,
// non-blocking flock that succeeds means nobody does (it is released at
// once). It never creates the lock file. Readers that probe all the time
// could keep a runtime from starting (flock gives a waiting exclusive lock
// no priority over new shared ones); a probe holds it for microseconds, so
// readers at any human or UI rate (one probe per command, per rescan, per
// lock-file event) leave it free almost always.
func ProbeRuntime(dir string) (RuntimeState, error) {
	p := RuntimeLockPath(dir)
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return RuntimeState{}, nil // never ran here
	}
	if err != nil {
		return RuntimeState{}, fmt.Errorf("probe %s: %w", p, err)
	}
	defer f.Close()
	st := RuntimeState{}
	switch err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); {
	case errors.Is(err, syscall.EWOULDBLOCK):
		st.Running = true
	case err != nil:
		return RuntimeState{}, fmt.Errorf("probe %s: %w", p, err)
	default:
		// Released at once, before anything else: while a probe holds it, a
		// runtime starting must wait (flockExclusive).
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
	st.Last, _ = readRecord(p) // a record being written reads as unknown
	if info, err := f.Stat(); err == nil {
		st.LastAlive = info.ModTime()
	}
	return st, nil
}

// writeRecord replaces the lock file's content with rec.
func writeRecord(f *os.File, rec RuntimeRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err = f.WriteAt(append(b, '\n'), 0)
	return err
}

// readRecord reads the lock file's record; a bare pid (the format before
// the record) reads as a record with only the pid.
func readRecord(p string) (RuntimeRecord, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return RuntimeRecord{}, err
	}
	var rec RuntimeRecord
	if jerr := json.Unmarshal(b, &rec); jerr == nil {
		return rec, nil
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return RuntimeRecord{}, fmt.Errorf("%s: not a runtime record", p)
	}
	return RuntimeRecord{PID: pid}, nil
}

// holderPID is the pid the lock file names, for the error a second runtime
// gives, or "unknown".
func holderPID(p string) string {
	rec, err := readRecord(p)
	if err != nil || rec.PID == 0 {
		return "unknown"
	}
	return strconv.Itoa(rec.PID)
}
