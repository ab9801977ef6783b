package realcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CodexArgs is the command line of `codex app-server`: JSON-RPC over
// stdio, one JSON object a line, without the "jsonrpc" member. The
// update_plan tool (and so turn/plan/updated) is off by default for the
// model CodexEnv names; the -c turns it on.
var CodexArgs = []string{"app-server", "-c", "tools.update_plan.enabled=true"}

// Codex is a running app server and the client end of its JSON-RPC.
type Codex struct {
	*Proc
	id int
}

// StartCodex starts `codex app-server` with extra arguments after
// CodexArgs.
func StartCodex(b Bins, e Env, extra ...string) (*Codex, error) {
	p, err := Start("codex", b.Codex, append(append([]string(nil), CodexArgs...), extra...), e)
	if err != nil {
		return nil, err
	}
	return &Codex{Proc: p}, nil
}

// RPCMessage is one line of the app server's: a response (ID, Result or
// Error), a notification (Method, Params) or a request of the server's
// (ID, Method, Params).
type RPCMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Line []byte `json:"-"`
}

// IsRequest says the message is a request of the server's, which the
// client must answer.
func (m RPCMessage) IsRequest() bool { return len(m.ID) > 0 && m.Method != "" }

func readRPC(line []byte) (RPCMessage, bool) {
	var m RPCMessage
	if json.Unmarshal(line, &m) != nil {
		return RPCMessage{}, false
	}
	m.Line = line
	return m, true
}

// Call sends a request and waits for its response, decoding its result
// into result (if not nil). A JSON-RPC error is an error. Call does not
// move NextMessage's place: what the server prints meanwhile is still
// there to read.
func (c *Codex) Call(ctx context.Context, method string, params, result any) error {
	c.id++
	id := strconv.Itoa(c.id)
	from := c.Len()
	if err := c.Send(map[string]any{"id": c.id, "method": method, "params": params}); err != nil {
		return err
	}
	line, _, err := c.Await(ctx, "the response to "+method, from, func(b []byte) bool {
		m, ok := readRPC(b)
		return ok && m.Method == "" && string(m.ID) == id
	})
	if err != nil {
		return err
	}
	m, _ := readRPC(line)
	if m.Error != nil {
		return fmt.Errorf("realcli: codex answered %s with error %d: %s", method, m.Error.Code, m.Error.Message)
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(m.Result, result); err != nil {
		return fmt.Errorf("realcli: the result of %s: %w: %s", method, err, line)
	}
	return nil
}

// Notify sends a notification.
func (c *Codex) Notify(method string, params any) error {
	msg := map[string]any{"method": method}
	if params != nil {
		msg["params"] = params
	}
	return c.Send(msg)
}

// NextMessage waits for the next notification or server request for
// which match holds (any, if match is nil); responses are skipped.
func (c *Codex) NextMessage(ctx context.Context, what string, match func(RPCMessage) bool) (RPCMessage, error) {
	line, err := c.Next(ctx, what, func(b []byte) bool {
		m, ok := readRPC(b)
		return ok && m.Method != "" && (match == nil || match(m))
	})
	if err != nil {
		return RPCMessage{}, err
	}
	m, _ := readRPC(line)
	return m, nil
}

// ExpectRequest waits for the server's next request, which must be
// method; a turn/completed first is an error.
func (c *Codex) ExpectRequest(ctx context.Context, method string) (RPCMessage, error) {
	m, err := c.NextMessage(ctx, method, func(m RPCMessage) bool { return m.IsRequest() || m.Method == "turn/completed" })
	switch {
	case err != nil:
		return m, err
	case m.Method != method:
		return m, fmt.Errorf("realcli: codex sent %s while %s was awaited: %s", m.Method, method, m.Line)
	}
	return m, nil
}

// ExpectTurnCompleted waits for turn/completed; a server request first is
// an error.
func (c *Codex) ExpectTurnCompleted(ctx context.Context) (RPCMessage, error) {
	m, err := c.NextMessage(ctx, "turn/completed", func(m RPCMessage) bool { return m.IsRequest() || m.Method == "turn/completed" })
	switch {
	case err != nil:
		return m, err
	case m.Method != "turn/completed":
		return m, fmt.Errorf("realcli: codex sent %s before completing the turn: %s", m.Method, m.Line)
	}
	return m, nil
}

// Decide answers an approval request with decision (accept,
// acceptForSession, decline, cancel).
func (c *Codex) Decide(req RPCMessage, decision string) error {
	return c.Send(map[string]any{"id": req.ID, "result": map[string]any{"decision": decision}})
}

// TrustHooks trusts every hook the app server lists for cwd as a person
// does in Codex's /hooks, which records each in config.toml as
// [hooks.state."KEY"] trusted_hash: Codex runs a user's hook only then.
// It fails unless every hook listed was untrusted before and trusted after.
func (c *Codex) TrustHooks(ctx context.Context, e Env, cwd string) error {
	type listed struct {
		Data []struct {
			Hooks []struct{ Key, CurrentHash, TrustStatus string }
		}
	}
	list := func() (listed, error) {
		var l listed
		err := c.Call(ctx, "hooks/list", map[string]any{"cwds": []string{cwd}}, &l)
		return l, err
	}
	before, err := list()
	if err != nil {
		return err
	}
	var state strings.Builder
	for _, d := range before.Data {
		for _, h := range d.Hooks {
			if h.TrustStatus != "untrusted" {
				return fmt.Errorf("realcli: hook %s is %s before it was trusted", h.Key, h.TrustStatus)
			}
			fmt.Fprintf(&state, "\n[hooks.state.%q]\ntrusted_hash = %q\n", h.Key, h.CurrentHash)
		}
	}
	if state.Len() == 0 {
		return errors.New("realcli: the app server lists no hook to trust")
	}
	f, err := os.OpenFile(filepath.Join(e.Var("CODEX_HOME"), "config.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("realcli: %w", err)
	}
	_, err = f.WriteString(state.String())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("realcli: %w", err)
	}
	after, err := list()
	if err != nil {
		return err
	}
	for _, d := range after.Data {
		for _, h := range d.Hooks {
			if h.TrustStatus != "trusted" {
				return fmt.Errorf("realcli: hook %s is %s after it was trusted", h.Key, h.TrustStatus)
			}
		}
	}
	return nil
}
