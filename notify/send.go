package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// A Channel delivers an event somewhere a person looks.
type Channel interface {
	// Name says which channel, in a warning.
	Name() string
	Send(ctx context.Context, e Event) error
}

// Webhook posts an event to URL: as ntfy reads a message (the body is the
// text, the title and tags are headers), or with JSON, as one JSON object
// of the Event's fields and its title.
type Webhook struct {
	URL    string
	JSON   bool
	Client *http.Client // nil: one with a 10 s timeout
}

// Name is the URL without its credentials.
func (h Webhook) Name() string { return "webhook " + Redact(h.URL) }

// Send posts e once.
func (h Webhook) Send(ctx context.Context, e Event) error {
	var body []byte
	ctype := "text/plain; charset=utf-8"
	if h.JSON {
		b, err := json.Marshal(struct {
			Event
			Title string `json:"title"`
		}{e, e.Title()})
		if err != nil {
			return err
		}
		body, ctype = b, "application/json"
	} else {
		body = []byte(e.Body())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: %s", h.Name(), strings.ReplaceAll(err.Error(), h.URL, Redact(h.URL)))
	}
	req.Header.Set("Content-Type", ctype)
	if !h.JSON {
		req.Header.Set("Title", "huddle: "+e.Title())
		req.Header.Set("Tags", "huddle,"+e.Kind)
	}
	c := h.Client
	if c == nil {
		c = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := c.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL, with its credentials, is said by Name
		}
		return fmt.Errorf("%s: %w", h.Name(), err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %s", h.Name(), resp.Status)
	}
	return nil
}

// Redact is u without the credentials it may carry: a password, and the
// query (ntfy and others take an access token there).
func Redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(an unreadable URL)"
	}
	user := p.User != nil
	p.User = nil
	if p.RawQuery != "" {
		p.RawQuery = "***"
	}
	s := p.String()
	if user {
		s = strings.Replace(s, "//", "//***@", 1)
	}
	return s
}

// Desktop shows an event with notify-send (libnotify), where it is on
// PATH.
type Desktop struct{ Path string }

// FindDesktop is the desktop channel, if notify-send is on PATH.
func FindDesktop() (Desktop, bool) {
	p, err := exec.LookPath("notify-send")
	return Desktop{Path: p}, err == nil
}

func (d Desktop) Name() string { return "notify-send" }

func (d Desktop) Send(ctx context.Context, e Event) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, d.Path, "--app-name=huddle", "--", "huddle: "+e.Title(), e.Body()).CombinedOutput()
	if err != nil {
		return fmt.Errorf("notify-send: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Sender hands each event to its channels from a goroutine of its own, so
// that a slow webhook never holds the screen or the runtime. A failed send
// is tried again after 1 s, 2 s and 4 s; a run of failures of a channel is
// said once through warn, and its end once too.
type Sender struct {
	chans []Channel
	warn  func(string)

	mu     sync.Mutex
	queue  []Event
	kick   chan struct{}
	done   chan struct{}
	cancel context.CancelFunc
}

// sendTries is how many times a send is tried; sendFirst the first wait
// between two tries, doubled each time (a var: a test waits less).
const sendTries = 4

var sendFirst = time.Second

// Start starts a Sender on chans; Close stops it.
func Start(ctx context.Context, chans []Channel, warn func(string)) *Sender {
	ctx, cancel := context.WithCancel(ctx)
	s := &Sender{chans: chans, warn: warn, kick: make(chan struct{}, 1), done: make(chan struct{}), cancel: cancel}
	go s.run(ctx)
	return s
}

// Notify queues e for every channel; it never blocks.
func (s *Sender) Notify(e Event) {
	s.mu.Lock()
	s.queue = append(s.queue, e)
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Close stops the sender; what is queued and not sent yet is dropped.
func (s *Sender) Close() {
	s.cancel()
	<-s.done
}

func (s *Sender) run(ctx context.Context) {
	defer close(s.done)
	failing := map[string]bool{}
	for {
		s.mu.Lock()
		q := s.queue
		s.queue = nil
		s.mu.Unlock()
		for _, e := range q {
			for _, c := range s.chans {
				err := s.send(ctx, c, e)
				if ctx.Err() != nil {
					return
				}
				switch {
				case err != nil && !failing[c.Name()]:
					failing[c.Name()] = true
					s.warn(fmt.Sprintf("notifications through %s fail (said once until they work again): %v", c.Name(), err))
				case err == nil && failing[c.Name()]:
					failing[c.Name()] = false
					s.warn(fmt.Sprintf("notifications through %s work again", c.Name()))
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		}
	}
}

// send tries c with backoff.
func (s *Sender) send(ctx context.Context, c Channel, e Event) error {
	wait := sendFirst
	var err error
	for try := range sendTries {
		if try > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
			wait *= 2
		}
		if err = c.Send(ctx, e); err == nil {
			return nil
		}
	}
	return err
}
