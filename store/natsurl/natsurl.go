// Package natsurl reads the URL of a team kept in NATS
// (nats://[TOKEN@]HOST:PORT/TEAM) and the secrets a URL or a credentials
// file holds, without the NATS client: the commands that only name a
// store, or print it, link nothing more.
package natsurl

import (
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"huddle/store"
)

// Target is a parsed store URL.
type Target struct {
	// Server is the URL handed to the NATS client: scheme, credentials and
	// host, no path.
	Server string
	// Team is the team the URL names.
	Team string
	// secrets are the credentials in the URL, scrubbed from every error.
	secrets []string
}

// ParseURL reads nats://[user[:pass]@|token@]HOST:PORT/TEAM or tls://…. An
// error never repeats the credentials.
func ParseURL(raw string) (Target, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Target{}, fmt.Errorf("store URL %s: not a URL", Redact(raw))
	}
	if u.Scheme != "nats" && u.Scheme != "tls" {
		return Target{}, fmt.Errorf("store URL %s: want nats://HOST:PORT/TEAM or tls://HOST:PORT/TEAM", Redact(raw))
	}
	if u.Host == "" {
		return Target{}, fmt.Errorf("store URL %s: no host", Redact(raw))
	}
	team := strings.Trim(u.Path, "/")
	if team == "" {
		return Target{}, fmt.Errorf("store URL %s: no team: want %s://HOST:PORT/TEAM", Redact(raw), u.Scheme)
	}
	if err := store.ValidateTeam(team); err != nil {
		return Target{}, fmt.Errorf("store URL %s: %w", Redact(raw), err)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return Target{}, fmt.Errorf("store URL %s: no query or fragment is read", Redact(raw))
	}
	t := Target{Team: team}
	if u.User != nil {
		t.secrets = append(t.secrets, u.User.Username())
		if p, ok := u.User.Password(); ok {
			t.secrets = append(t.secrets, p)
		}
	}
	server := url.URL{Scheme: u.Scheme, User: u.User, Host: u.Host}
	t.Server = server.String()
	return t, nil
}

// Secrets are the credentials the URL held (user, password or token), for
// a caller that scrubs its own output of them.
func (t Target) Secrets() []string { return slices.Clone(t.secrets) }

// Redact is raw with its credentials replaced by "***": what a store URL
// looks like on a screen, in a log line or in an error.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		// Not a URL: cut everything up to an @ that may end credentials.
		if i := strings.LastIndex(raw, "@"); i >= 0 {
			return "***" + raw[i:]
		}
		return raw
	}
	if u.User == nil {
		return u.String()
	}
	// url.User("***") would print %2A%2A%2A: put the stars in by hand.
	u.User = nil
	return strings.Replace(u.String(), "://", "://***@", 1)
}

// CredsSecrets are the credentials of a NATS credentials file: the user
// JWT and the NKey seed, each the lines between a -----BEGIN and the
// -----END that follows it, for a caller that scrubs its own output of
// them.
func CredsSecrets(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--nats-creds: %w", err)
	}
	var out []string
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "---") && strings.Contains(line, "BEGIN"):
			in = true
		case strings.HasPrefix(line, "---") && strings.Contains(line, "END"):
			in = false
		case in && line != "":
			out = append(out, line)
		}
	}
	return out, nil
}
