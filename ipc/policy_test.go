package ipc

import (
	"strings"
	"testing"

	"huddle/protocol"
)

func TestPolicyCheck(t *testing.T) {
	base := `{"enabled":true,"owner":"puruto-reservas","max_hops":2,"default_timeout_sec":120,
	  "allowed_targets":["puruto-finanzas","puruto-data"],
	  "allowed_actions":{"puruto-finanzas":["pagar_factura","consultar_saldo"]}}`
	p, err := ParsePolicy([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	disabled, _ := ParsePolicy([]byte(`{"enabled":false,"allowed_targets":["puruto-data"]}`))
	empty, _ := ParsePolicy([]byte(`{"allowed_targets":[]}`))
	cases := []struct {
		name           string
		p              *Policy
		target, action string
		hop            int
		reason         string // "" allowed
	}{
		{"allowed target and action", p, "puruto-finanzas", "pagar_factura", 0, ""},
		{"action not allowed", p, "puruto-finanzas", "borrar_todo", 0, protocol.DeniedNotAllowedAction},
		{"target without an actions entry allows any action", p, "puruto-data", "anything", 0, ""},
		{"target not allowed", p, "puruto-auditor", "auditar", 0, protocol.DeniedNotAllowedTarget},
		{"hop max_hops-1 allowed", p, "puruto-data", "leer", 1, ""},
		{"hop max_hops denied", p, "puruto-data", "leer", 2, protocol.DeniedMaxHops},
		{"hop max_hops+1 denied", p, "puruto-data", "leer", 3, protocol.DeniedMaxHops},
		{"disabled denies everything", disabled, "puruto-data", "leer", 0, protocol.DeniedDisabled},
		{"empty allowlist denies every target", empty, "puruto-data", "leer", 0, protocol.DeniedNotAllowedTarget},
	}
	for _, c := range cases {
		d := c.p.Check(c.target, c.action, c.hop)
		switch {
		case c.reason == "" && d != nil:
			t.Errorf("%s: denied (%s), want allowed", c.name, d.Reason)
		case c.reason != "" && (d == nil || d.Reason != c.reason):
			t.Errorf("%s: got %+v, want DENIED %s", c.name, d, c.reason)
		case d != nil && !strings.HasPrefix(d.Message, "DENIED: "):
			t.Errorf("%s: message %q", c.name, d.Message)
		}
	}
}

func TestPolicyDefaultsAndTypes(t *testing.T) {
	p, err := ParsePolicy([]byte(`{"allowed_targets":["x"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Enabled || p.MaxHops != 2 || p.DefaultTimeoutSec != 120 {
		t.Fatalf("defaults: %+v", p)
	}
	if p.Timeout(0).Seconds() != 120 || p.Timeout(5).Seconds() != 5 {
		t.Fatalf("timeouts: %v %v", p.Timeout(0), p.Timeout(5))
	}
	for _, c := range []struct{ json, field string }{
		{`{"allowed_targets":"puruto-data"}`, "allowed_targets"},
		{`{"allowed_actions":["read","write"]}`, "allowed_actions"},
		{`{"enabled":"yes"}`, "enabled"},
		{`{"owner":7}`, "owner"},
		{`{"max_hops":"2"}`, "max_hops"},
		{`{"default_timeout_sec":1.5}`, "default_timeout_sec"},
		{`not json`, "not a JSON object"},
	} {
		if _, err := ParsePolicy([]byte(c.json)); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: error %v, want one naming %s", c.json, err, c.field)
		}
	}
}
