package protocol_test

import (
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/protocol"
)

var messageIDRE = regexp.MustCompile(`^m-[0-9A-HJKMNP-TV-Z]{26}$`)

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// ulidMillis decodes the 48-bit millisecond timestamp of a message id (its
// first 10 base32 digits).
func ulidMillis(t *testing.T, id string) int64 {
	t.Helper()
	var v uint64
	for _, c := range id[2:12] {
		d := strings.IndexRune(crockford, c)
		if d < 0 {
			t.Fatalf("%s: %q is not Crockford base32", id, c)
		}
		v = v<<5 | uint64(d)
	}
	if v>>48 != 0 {
		t.Fatalf("%s: time prefix has more than 48 bits", id)
	}
	return int64(v)
}

func TestNewMessageIDUniqueOrderedWellFormed(t *testing.T) {
	const n = 100_000
	before := time.Now().UnixMilli()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = protocol.NewMessageID()
	}
	after := time.Now().UnixMilli()

	seen := make(map[string]bool, n)
	sameMS := 0
	for i, id := range ids {
		if !messageIDRE.MatchString(id) {
			t.Fatalf("id %d = %q: want m- and 26 Crockford base32 digits", i, id)
		}
		if err := protocol.ValidateID(id); err != nil {
			t.Fatalf("id %q fails ValidateID: %v", id, err)
		}
		if seen[id] {
			t.Fatalf("id %q repeated", id)
		}
		seen[id] = true
		ms := ulidMillis(t, id)
		if ms < before || ms > after {
			t.Fatalf("id %q carries time %d, want within [%d, %d]", id, ms, before, after)
		}
		if i > 0 {
			if id <= ids[i-1] {
				t.Fatalf("ids not strictly increasing: %q then %q", ids[i-1], id)
			}
			if ms == ulidMillis(t, ids[i-1]) {
				sameMS++
			}
		}
	}
	// The ordering above must have held within a millisecond, not only across.
	if sameMS == 0 {
		t.Fatalf("no two of %d ids shared a millisecond; monotonicity within one ms untested", n)
	}
}

func TestNewMessageIDConcurrent(t *testing.T) {
	const workers, per = 8, 5000
	out := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids := make([]string, per)
			for i := range ids {
				ids[i] = protocol.NewMessageID()
			}
			out[w] = ids
		}()
	}
	wg.Wait()
	seen := make(map[string]bool, workers*per)
	for _, ids := range out {
		for i, id := range ids {
			if seen[id] {
				t.Fatalf("id %q generated twice", id)
			}
			seen[id] = true
			if i > 0 && id <= ids[i-1] {
				t.Fatalf("one goroutine's ids not increasing: %q then %q", ids[i-1], id)
			}
		}
	}
}

func TestRandomIDs(t *testing.T) {
	tests := []struct {
		name string
		gen  func() string
		re   *regexp.Regexp
	}{
		{"shutdown", func() string { return protocol.NewRequestID(protocol.KindShutdown) }, regexp.MustCompile(`^sd-[0-9a-f]{12}$`)},
		{"plan", func() string { return protocol.NewRequestID(protocol.KindPlan) }, regexp.MustCompile(`^pl-[0-9a-f]{12}$`)},
		{"correlation", protocol.NewCorrelationID, regexp.MustCompile(`^corr-[0-9a-f]{12}$`)},
		{"invocation", protocol.NewInvocationID, regexp.MustCompile(`^req-[0-9a-f]{12}$`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := make(map[string]bool)
			for range 2000 {
				id := tt.gen()
				if !tt.re.MatchString(id) {
					t.Fatalf("id %q does not match %s", id, tt.re)
				}
				if err := protocol.ValidateID(id); err != nil {
					t.Fatalf("id %q fails ValidateID: %v", id, err)
				}
				if seen[id] {
					t.Fatalf("id %q repeated: request ids must never be reused", id)
				}
				seen[id] = true
			}
		})
	}
}
