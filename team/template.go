package team

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Defaults of the llm template: a local Ollama on its standard port, a
// small coder model, no key.
const (
	DefaultLLMBaseURL = "http://127.0.0.1:11434/v1"
	DefaultLLMModel   = "qwen2.5-coder:7b"
)

// LLMTemplate is what the llm team template asks of its environment at
// init time: HUDDLE_LLM_BASE_URL, HUDDLE_LLM_MODEL, HUDDLE_LLM_API_KEY_ENV
// (the NAME of the key's variable; the key itself is read at run time).
type LLMTemplate struct {
	BaseURL, Model, APIKeyEnv string
}

// LLMTemplateFromEnv reads the template's settings with getenv (os.Getenv),
// with the defaults for what is unset.
func LLMTemplateFromEnv(getenv func(string) string) LLMTemplate {
	v := LLMTemplate{BaseURL: getenv("HUDDLE_LLM_BASE_URL"), Model: getenv("HUDDLE_LLM_MODEL"), APIKeyEnv: getenv("HUDDLE_LLM_API_KEY_ENV")}
	if v.BaseURL == "" {
		v.BaseURL = DefaultLLMBaseURL
	}
	if v.Model == "" {
		v.Model = DefaultLLMModel
	}
	return v
}

// LLMTeam is the llm template's team: a planner that breaks the lead's
// task into steps, a coder that carries them out in work/ behind the plan
// gate, a reviewer the coder calls. They share work/.
func LLMTeam(v LLMTemplate) *Team {
	rt := func(prompt, system string, tools ...string) RuntimeSpec {
		return RuntimeSpec{Kind: RuntimeLLM, Provider: ProviderOpenAI, BaseURL: v.BaseURL, Model: v.Model,
			APIKeyEnv: v.APIKeyEnv, Prompt: prompt, System: system, Tools: tools, MaxTurns: 40, MaxTokens: 200000}
	}
	return &Team{
		Name: "llm-team",
		Settings: Settings{
			ApprovalDeadline: Duration(30 * time.Minute),
		},
		Members: []MemberSpec{
			{Name: "planner", Role: "breaks the lead's task into small steps for the coder", Dir: "work", IPC: "ipc/planner.puruto-ipc.json",
				Runtime: rt("", "When the lead sends a task, read the code in your directory, break the task into small steps "+
					"and send them to the coder with send_message. Tell the lead when the coder reports the task done.",
					"read_file", "list_files")},
			{Name: "coder", Role: "writes the change, behind an approved plan", Dir: "work", IPC: "ipc/coder.puruto-ipc.json",
				Runtime: rt("", "Before you change a file or run a command, submit a plan with submit_plan and wait for the lead. "+
					"When a change is done, ask the reviewer with call_teammate (target reviewer, action review), then "+
					"report to the planner with send_message.",
					"read_file", "write_file", "edit_file", "list_files", "bash")},
			{Name: "reviewer", Role: "reviews the coder's change when called", Dir: "work", IPC: "ipc/reviewer.puruto-ipc.json",
				Runtime: rt("", "You are called with action review: read the files named in the prompt and answer with a short "+
					"review: what is wrong, or \"looks good\". To ask the coder why it did something, use call_teammate "+
					"(target coder, action explain).",
					"read_file", "list_files")},
		},
	}
}

// llmPolicies are the allowlists between the template's members.
var llmPolicies = map[string][]string{
	"planner":  {"coder", "reviewer"},
	"coder":    {"reviewer"},
	"reviewer": {"coder"},
}

// InitLLM writes the llm template into dir (LLMFiles), and the work/
// directory its members share. It refuses to overwrite anything, and to
// write a team that does not validate (a bad HUDDLE_LLM_* value).
func InitLLM(dir string, v LLMTemplate) error {
	files, err := LLMFiles(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if err := writeNew(dir, files); err != nil {
		return err
	}
	return InitLLMWork(dir)
}

// InitLLMWork makes the work/ directory the llm template's members share,
// under the team directory dir.
func InitLLMWork(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "work"), 0o700); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	return nil
}

// LLMFiles are the llm template's files with the settings v: team.json
// and the members' .puruto-ipc.json under ipc/. A team that does not
// validate (a bad HUDDLE_LLM_* value) is refused.
func LLMFiles(v LLMTemplate) ([]InitFile, error) {
	t := LLMTeam(v)
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("init: %w", err)
	}
	if _, err := Parse(b); err != nil {
		return nil, fmt.Errorf("init: the llm template with these HUDDLE_LLM_* settings: %w", err)
	}
	files := []InitFile{{"team.json", append(b, '\n')}}
	for _, m := range t.Members {
		p := map[string]any{"enabled": true, "owner": m.Name, "max_hops": 2, "default_timeout_sec": 300,
			"allowed_targets": llmPolicies[m.Name], "allowed_actions": map[string][]string{}}
		switch m.Name {
		case "planner", "coder":
			p["allowed_actions"] = map[string][]string{"reviewer": {"review"}}
		case "reviewer":
			p["allowed_actions"] = map[string][]string{"coder": {"explain"}}
		}
		pb, err := json.MarshalIndent(p, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("init: %w", err)
		}
		files = append(files, InitFile{m.IPC, append(pb, '\n')})
	}
	return files, nil
}
