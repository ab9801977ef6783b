package protocol

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"sync"
	"time"
)

// Crockford's base32: sorts the same as the numbers it encodes.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

var idGen struct {
	sync.Mutex
	lastMS uint64
	hi     uint16 // 80 random bits as hi:lo, incremented within one millisecond
	lo     uint64
}

// NewMessageID returns "m-" followed by a 26-character ULID: unique, and
// lexically ordered by creation time (monotonic within this process, even
// within one millisecond).
func NewMessageID() string { return "m-" + newULID(time.Now()) }

func newULID(now time.Time) string {
	ms := uint64(now.UnixMilli())
	idGen.Lock()
	if ms <= idGen.lastMS {
		ms = idGen.lastMS
		idGen.lo++
		if idGen.lo == 0 {
			idGen.hi++
		}
	} else {
		var b [10]byte
		mustRand(b[:])
		idGen.hi = binary.BigEndian.Uint16(b[:2])
		idGen.lo = binary.BigEndian.Uint64(b[2:])
		idGen.lastMS = ms
	}
	hi, lo := idGen.hi, idGen.lo
	idGen.Unlock()

	// 128 bits: 48 of time, 80 of entropy, written as 26 base32 digits.
	var out [26]byte
	// Low 64 bits of entropy, then 16 high bits of entropy, then 48 bits of time.
	bits := [2]uint64{ms<<16 | uint64(hi), lo} // 128-bit big-endian value
	for i := 25; i >= 0; i-- {
		out[i] = crockford[bits[1]&31]
		bits[1] = bits[1]>>5 | bits[0]<<59
		bits[0] >>= 5
	}
	return string(out[:])
}

// NewRequestID returns a fresh random request id for kind: its prefix
// ("sd-", "pl-", "pm-", "su-", "rv-") followed by 12 hex digits from
// crypto/rand.
func NewRequestID(kind RequestKind) string {
	rule, ok := kindRules[kind]
	if !ok {
		rule = kindRules[KindPlan]
	}
	return rule.prefix + randHex(6)
}

// KindOfID is the kind a request id's prefix names ("" for none): what a
// decision alone says of a request whose record does not read.
func KindOfID(id string) RequestKind {
	for _, k := range Kinds {
		if strings.HasPrefix(id, kindRules[k].prefix) {
			return k
		}
	}
	return ""
}

// NewCorrelationID returns "corr-" followed by 12 random hex digits.
func NewCorrelationID() string { return "corr-" + randHex(6) }

// NewInvocationID returns "req-" followed by 12 random hex digits.
func NewInvocationID() string { return "req-" + randHex(6) }

func randHex(n int) string {
	b := make([]byte, n)
	mustRand(b)
	return hex.EncodeToString(b)
}

func mustRand(b []byte) {
	// crypto/rand.Read never returns an error on supported platforms (Go 1.24+).
	_, _ = rand.Read(b)
}
