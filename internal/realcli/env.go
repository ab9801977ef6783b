package realcli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Env is an isolated environment for one CLI: every directory it writes
// (home, config, temporary files) is under Root, and the only network
// address it knows is its fake's loopback URL. Nothing of the real user's
// environment is passed but PATH. The fake is its proxy too, for every
// host but loopback: a request for anywhere else reaches the fake, which
// records and refuses it, so a scenario sees it.
type Env struct {
	Root string
	Work string // the working directory to run it in
	Vars []string
}

// Var is the value of the variable name in e ("" when unset).
func (e Env) Var(name string) string {
	v := ""
	for _, kv := range e.Vars {
		if val, ok := strings.CutPrefix(kv, name+"="); ok {
			v = val // the last one wins, as in exec.Cmd.Env
		}
	}
	return v
}

// ClaudeEnv makes an environment for Claude Code under root that sends
// its Messages requests to baseURL (a fakeapi.Anthropic) with a dummy key,
// with telemetry, error reporting, the auto-updater and every other
// nonessential request turned off.
func ClaudeEnv(root, baseURL string) (Env, error) { return claudeEnv(root, baseURL, baseURL) }

// claudeEnv is ClaudeEnv with the API at apiURL and proxy the proxy.
func claudeEnv(root, apiURL, proxy string) (Env, error) {
	e, err := newEnv(root, proxy)
	if err != nil {
		return Env{}, err
	}
	config := filepath.Join(root, "claude-config")
	if err := os.MkdirAll(config, 0o755); err != nil {
		return Env{}, fmt.Errorf("realcli: %w", err)
	}
	e.Vars = append(e.Vars,
		"CLAUDE_CONFIG_DIR="+config,
		"ANTHROPIC_BASE_URL="+apiURL,
		"ANTHROPIC_API_KEY="+claudeKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1",
	)
	return e, nil
}

// CodexProvider is the name of the model provider CodexEnv configures.
const CodexProvider = "huddle_fake"

// CodexModel is the model CodexEnv configures: one Codex knows, so it
// offers the tools it offers a real model.
const CodexModel = "gpt-5.5"

// codexKeyVar is the provider's env_key.
const codexKeyVar = "HUDDLE_FAKE_OPENAI_API_KEY"

// The dummy keys the environments carry; a fixture must hold neither.
const (
	claudeKey = "sk-ant-fake-key-for-a-loopback-test"
	codexKey  = "sk-fake-key-for-a-loopback-test"
)

// CodexEnv makes an environment for Codex under root: a CODEX_HOME whose
// config.toml names one model provider, the Responses API at baseURL (a
// fakeapi.Responses) with a dummy key in env_key. Its plugins are off:
// with them on, the app server fetches plugin and app catalogues from
// github.com, api.github.com and chatgpt.com at start.
func CodexEnv(root, baseURL string) (Env, error) { return codexEnv(root, baseURL, baseURL) }

// codexEnv is CodexEnv with the API at apiURL and proxy the proxy.
func codexEnv(root, apiURL, proxy string) (Env, error) {
	e, err := newEnv(root, proxy)
	if err != nil {
		return Env{}, err
	}
	home := filepath.Join(root, "codex-home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return Env{}, fmt.Errorf("realcli: %w", err)
	}
	config := fmt.Sprintf(`model = %q
model_provider = %q
check_for_update_on_startup = false

[model_providers.%s]
name = "huddle fake"
base_url = %q
wire_api = "responses"
env_key = %q

[analytics]
enabled = false

[feedback]
enabled = false

[features]
plugins = false
`, CodexModel, CodexProvider, CodexProvider, strings.TrimSuffix(apiURL, "/")+"/v1", codexKeyVar)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o644); err != nil {
		return Env{}, fmt.Errorf("realcli: writing config.toml: %w", err)
	}
	e.Vars = append(e.Vars, "CODEX_HOME="+home, codexKeyVar+"="+codexKey)
	return e, nil
}

// newEnv makes root's home, temporary and working directories, with
// proxy (if not "") the proxy for every host but loopback.
func newEnv(root, proxy string) (Env, error) {
	e := Env{Root: root, Work: filepath.Join(root, "work")}
	home, tmp := filepath.Join(root, "home"), filepath.Join(root, "tmp")
	for _, d := range []string{home, tmp, e.Work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return Env{}, fmt.Errorf("realcli: %w", err)
		}
	}
	e.Vars = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + tmp, "LANG=C.UTF-8", "TERM=dumb"}
	if proxy != "" {
		for _, v := range []string{"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"} {
			e.Vars = append(e.Vars, v+"="+proxy, strings.ToLower(v)+"="+proxy)
		}
		e.Vars = append(e.Vars, "NO_PROXY=127.0.0.1,localhost,::1", "no_proxy=127.0.0.1,localhost,::1")
	}
	return e, nil
}
