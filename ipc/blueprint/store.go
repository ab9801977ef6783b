package blueprint

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"sync"
	"time"

	"huddle/teamdir"
)

// Store persists finished executions under a team directory as one JSON
// line each, so a restarted server still answers status and result.
type Store struct {
	path string
	mu   sync.Mutex // an append never races a rewrite of this process
}

// NewStore keeps executions in dir/executions.jsonl.
func NewStore(dir string) *Store { return &Store{path: teamdir.ExecutionsPath(dir)} }

// Append records a finished execution.
func (s *Store) Append(e *execution) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return teamdir.AppendLine(s.path, append(b, '\n'))
}

// Load reads the executions finished after since, and rewrites the file
// without the older ones.
func (s *Store) Load(since time.Time) ([]*execution, error) {
	f, err := os.Open(s.path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []*execution
	dropped := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 2*MaxBody)
	for sc.Scan() {
		var e execution
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.ID == "" || e.Done == nil {
			dropped = true
			continue
		}
		if e.Done.Before(since) {
			dropped = true
			continue
		}
		out = append(out, &e)
	}
	if dropped {
		return out, s.Rewrite(out)
	}
	return out, sc.Err()
}

// Rewrite replaces the file with exactly these executions.
func (s *Store) Rewrite(execs []*execution) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var buf bytes.Buffer
	for _, e := range execs {
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		buf.Write(append(b, '\n'))
	}
	return teamdir.WriteFileAtomic(s.path, buf.Bytes())
}
