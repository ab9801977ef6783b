package team

import (
	"strings"
	"testing"
)

// llmTeam is a team.json with one llm member whose runtime is rt (a JSON
// object's fields) and whose dir is dir.
func llmTeam(dir, rt string) string {
	d := ""
	if dir != "" {
		d = `,"dir":"` + dir + `"`
	}
	return `{"name":"t","members":[{"name":"coder","role":"writes"` + d + `,"runtime":{"kind":"llm"` + rt + `}}]}`
}

func TestParseLLMMember(t *testing.T) {
	tm, err := Parse([]byte(llmTeam("work/coder", `,"provider":"openai","base_url":"http://127.0.0.1:11434/v1","model":"qwen2.5-coder:7b",
		"api_key_env":"OPENAI_API_KEY","prompt":"do it","system":"be brief","tools":["read_file","write_file","bash"],
		"max_turns":40,"max_tokens":200000,"price":{"input_per_mtok":3,"output_per_mtok":15}`)))
	if err != nil {
		t.Fatal(err)
	}
	rt := tm.Members[0].Runtime
	if rt.Provider != "openai" || rt.Model != "qwen2.5-coder:7b" || rt.APIKeyEnv != "OPENAI_API_KEY" || rt.MaxTurns != 40 || rt.MaxTokens != 200000 {
		t.Errorf("runtime = %+v", rt)
	}
	if !rt.PlanGate() {
		t.Error("plan_required unset with work tools: the gate must be on")
	}
	if rt.Sandbox != "" {
		t.Errorf("sandbox unset = %q", rt.Sandbox)
	}
	off, err := Parse([]byte(llmTeam("w", `,"provider":"openai","model":"m","tools":["bash"],"sandbox":"off"`)))
	if err != nil || off.Members[0].Runtime.Sandbox != SandboxOff {
		t.Errorf(`"sandbox": "off" parsed as %+v, %v`, off, err)
	}
	if got := rt.Price.Cost(1_000_000, 2_000_000); got != 33 {
		t.Errorf("cost of 1M in, 2M out = %v, want 33", got)
	}
}

func TestLLMPlanGateDefault(t *testing.T) {
	f, tr := false, true
	for _, tc := range []struct {
		name string
		rt   RuntimeSpec
		want bool
	}{
		{"no tools, unset", RuntimeSpec{}, false},
		{"tools, unset", RuntimeSpec{Tools: []string{"read_file"}}, true},
		{"tools, off", RuntimeSpec{Tools: []string{"bash"}, PlanRequired: &f}, false},
		{"no tools, on", RuntimeSpec{PlanRequired: &tr}, true},
	} {
		if got := tc.rt.PlanGate(); got != tc.want {
			t.Errorf("%s: PlanGate() = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestParseLLMErrorsNameMemberAndField(t *testing.T) {
	const okRT = `,"provider":"openai","model":"m"`
	for _, tc := range []struct {
		name, json string
		want       []string
	}{
		{"provider missing", llmTeam("", `,"model":"m"`), []string{`member "coder"`, "runtime.provider", "required"}},
		{"unknown provider", llmTeam("", `,"provider":"gemini","model":"m"`), []string{`member "coder"`, "runtime.provider", `"gemini"`}},
		{"model missing", llmTeam("", `,"provider":"anthropic"`), []string{`member "coder"`, "runtime.model", "required"}},
		{"bad base_url", llmTeam("", okRT+`,"base_url":"localhost:11434"`), []string{`member "coder"`, "runtime.base_url"}},
		{"unknown tool", llmTeam("w", okRT+`,"tools":["read_file","rm_rf"]`), []string{`member "coder"`, "runtime.tools[1]", `"rm_rf"`}},
		{"tool twice", llmTeam("w", okRT+`,"tools":["bash","bash"]`), []string{`member "coder"`, "runtime.tools[1]", "twice"}},
		{"tools without dir", llmTeam("", okRT+`,"tools":["bash"]`), []string{`member "coder"`, "dir", "required"}},
		{"negative max_turns", llmTeam("", okRT+`,"max_turns":-1`), []string{`member "coder"`, "runtime.max_turns"}},
		{"negative max_tokens", llmTeam("", okRT+`,"max_tokens":-1`), []string{`member "coder"`, "runtime.max_tokens"}},
		{"negative price", llmTeam("", okRT+`,"price":{"input_per_mtok":-1,"output_per_mtok":1}`), []string{`member "coder"`, "runtime.price"}},
		{"max_turns of the wrong type", llmTeam("", okRT+`,"max_turns":"many"`), []string{`member "coder"`, "runtime"}},
		{"unknown sandbox", llmTeam("w", okRT+`,"tools":["bash"],"sandbox":"none"`), []string{`member "coder"`, "runtime.sandbox", `"none"`, "on or off"}},
		{"sandbox of the wrong type", llmTeam("w", okRT+`,"sandbox":false`), []string{`member "coder"`, "runtime"}},
		{"sandbox on an exec member", `{"name":"t","members":[{"name":"coder","role":"r","runtime":{"kind":"exec","command":["x"],"sandbox":"off"}}]}`, []string{`member "coder"`, "runtime.sandbox", "llm"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse([]byte(tc.json)); err == nil {
				t.Fatal("Parse accepted it")
			} else {
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
			}
		})
	}
}

// A key pasted where its variable's name goes is refused without being
// repeated in the error.
func TestParseLLMKeyInsteadOfNameIsNotEchoed(t *testing.T) {
	const key = "sk-proj-Zq9THISISASECRET"
	_, err := Parse([]byte(llmTeam("", `,"provider":"openai","model":"m","api_key_env":"`+key+`"`)))
	if err == nil {
		t.Fatal("Parse accepted a key as api_key_env")
	}
	if !strings.Contains(err.Error(), "runtime.api_key_env") || strings.Contains(err.Error(), key) {
		t.Errorf("error = %q: want it to name runtime.api_key_env and not repeat the value", err)
	}
}
