package teamdir

import "sync"

// Joiner appends lines from many goroutines to one file the way AppendLine
// does, with one writer at a time: a caller that finds nobody writing
// writes every line queued meanwhile in one append, and the callers whose
// lines it took wait on a channel, not on the file's flock. A goroutine
// blocked in flock holds an OS thread: thousands of them (an agent's flood
// of calls, each tracing its spans) ran a runtime out of threads. A batch
// that fails fails whole (AppendLine leaves the file as it was), and every
// caller in it gets the error.
type Joiner struct {
	path string

	mu      sync.Mutex
	queued  []byte
	waiting []chan error
	writing bool
}

// NewJoiner appends to the file at path, created 0600 on the first append.
func NewJoiner(path string) *Joiner { return &Joiner{path: path} }

// Append appends lines (whole lines, the last ending with a newline) and
// returns once they are written, or failed.
func (j *Joiner) Append(lines []byte) error {
	done := make(chan error, 1)
	j.mu.Lock()
	j.queued = append(j.queued, lines...)
	j.waiting = append(j.waiting, done)
	if j.writing {
		j.mu.Unlock()
		return <-done
	}
	j.writing = true
	for len(j.waiting) > 0 {
		batch, waiting := j.queued, j.waiting
		j.queued, j.waiting = nil, nil
		j.mu.Unlock()
		err := AppendLine(j.path, batch)
		for _, w := range waiting {
			w <- err
		}
		j.mu.Lock()
	}
	j.writing = false
	j.mu.Unlock()
	return <-done
}
