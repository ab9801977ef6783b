package protocol_test

import (
	"strings"
	"testing"

	"huddle/protocol"
)

func TestValidateName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"alice", true},
		{"lead", true},
		{"a", true},
		{"0", true},
		{"puruto-finanzas", true},
		{"agent_7.v2", true},
		{"a" + strings.Repeat("b", 62), true}, // 63 chars
		{"", false},
		{"a" + strings.Repeat("b", 63), false}, // 64 chars
		{"LEAD", false},
		{"Alice", false},
		{"../x", false},
		{"..", false},
		{".hidden", false},
		{"-dash", false},
		{"_under", false},
		{"a/b", false},
		{`a\b`, false},
		{"a b", false},
		{"a\x00b", false},
		{"niño", false},
		{"alice\n", false},
	}
	for _, tt := range tests {
		err := protocol.ValidateName(tt.name)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateName(%q) = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

func TestValidateNameErrorClipsLongInput(t *testing.T) {
	err := protocol.ValidateName(strings.Repeat("X", 10000))
	if err == nil {
		t.Fatal("want an error")
	}
	if len(err.Error()) > 300 {
		t.Fatalf("error is %d bytes long; a hostile name must be clipped", len(err.Error()))
	}
}

func TestValidateMemberName(t *testing.T) {
	if err := protocol.ValidateMemberName("alice"); err != nil {
		t.Errorf("alice: %v", err)
	}
	err := protocol.ValidateMemberName(protocol.Lead)
	if err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Errorf("lead: err = %v, want reserved", err)
	}
	for _, bad := range []string{"", "../x", "a/b", "LEAD", strings.Repeat("a", 64)} {
		if protocol.ValidateMemberName(bad) == nil {
			t.Errorf("ValidateMemberName(%q) = nil, want an error", bad)
		}
	}
}

func TestValidateID(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"m-01JDX3ABCDEFGHJKMNPQRSTVWX", true},
		{"sd-0123456789ab", true},
		{"pl-5f1c9a2b7e31", true},
		{"req-20260224-001", true},
		{"abcd1234", true},
		{"X", true},
		{"a.b_c-D", true},
		{"A" + strings.Repeat("z", 63), true}, // 64 chars
		{"", false},
		{"A" + strings.Repeat("z", 64), false}, // 65 chars
		{"../x", false},
		{"a/b", false},
		{`a\b`, false},
		{".x", false},
		{"-x", false},
		{"_x", false},
		{"a b", false},
		{"a:b", false},
		{"a\x00", false},
		{"é", false},
	}
	for _, tt := range tests {
		err := protocol.ValidateID(tt.id)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateID(%q) = %v, want ok=%v", tt.id, err, tt.ok)
		}
	}
}
