// TEMPORARY STAND-IN, written by the "team" helper ONLY so that package team
// compiles against the agreed API before the "core" helper's Agent is on
// this branch. DELETE THIS FILE AT MERGE: the real Config, Agent, NewAgent,
// LimitError, ProviderConfig, NewModel and KnownTools replace it.

package llm

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// Config configures one llm teammate (agreed API).
type Config struct {
	Model        Model
	Name         string
	Role         string
	Teammates    []string
	System       string
	Prompt       string
	Tools        []string
	Dir          string
	PlanRequired bool
	MaxTurns     int
	MaxTokens    int64
	MaxOutput    int
	Env          Env
	Transcript   func(Entry)
	Retry        Backoff
	ToolTimeout  time.Duration
	OutputCap    int
}

// Backoff is the retry of 429 and 5xx (agreed API).
type Backoff struct {
	Base, Max time.Duration
	Attempts  int
}

// Agent is the model loop (agreed API); this stand-in cannot run.
type Agent struct{}

var errStub = errors.New("llm: stand-in Agent (agent_stub_team.go): the real one comes with package llm")

// NewAgent is the agreed constructor; the stand-in always fails.
func NewAgent(Config) (*Agent, error) { return nil, errStub }

// Run is the agreed main loop.
func (a *Agent) Run(context.Context) error { return errStub }

// Deliver is the agreed way to queue a user turn.
func (a *Agent) Deliver(string) {}

// Answer is the agreed way to answer an invocation.
func (a *Agent) Answer(context.Context, string, string) (string, error) { return "", errStub }

// LimitError ends a run at max_turns or max_tokens (agreed API).
type LimitError struct{ Limit string }

func (e *LimitError) Error() string { return "llm: " + e.Limit + " reached" }

// ProviderConfig says which provider and model to reach (agreed API).
type ProviderConfig struct {
	Provider, BaseURL, Model, APIKey string
	HTTPClient                       *http.Client
}

// NewModel is the agreed provider constructor; the stand-in always fails.
func NewModel(ProviderConfig) (Model, error) { return nil, errStub }

// KnownTools are the work tools (agreed API).
var KnownTools = []string{"read_file", "write_file", "edit_file", "list_files", "bash"}
