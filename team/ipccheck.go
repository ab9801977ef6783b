package team

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"huddle/ipc"
)

// ipcMember is what the IPC checks need of a member of team.json. It is read
// on its own as well, so that a team.json that does not validate still has
// its members' configs checked.
type ipcMember struct {
	Name string `json:"name"`
	Dir  string `json:"dir"`
	IPC  string `json:"ipc"`
}

// ValidateIPC checks the IPC setup of the team in dir: team.json with this
// package's rules, then each member's IPC config: the file its ipc field
// names (relative to the team directory), else the Puruto repo in its dir.
// An allowed target that is not a member is a warning. Finding paths are
// relative to dir.
func ValidateIPC(dir string) ipc.Report {
	var fs []ipc.Finding
	report := func() ipc.Report { return ipc.NewReport(dir, ipc.KindTeam, fs) }
	b, err := os.ReadFile(ConfigPath(dir))
	if err != nil {
		fs = append(fs, ipc.Finding{Level: ipc.LevelError, Code: ipc.CodeInvalidTeam, Path: "team.json",
			Message: "cannot be read: " + err.Error()})
		return report()
	}
	var members []ipcMember
	if t, err := Parse(b); err == nil {
		for _, m := range t.Members {
			members = append(members, ipcMember{m.Name, m.Dir, m.IPC})
		}
		fs = append(fs, llmKeyFindings(t, os.Getenv)...)
	} else {
		fs = append(fs, ipc.Finding{Level: ipc.LevelError, Code: ipc.CodeInvalidTeam, Path: "team.json",
			Message: strings.TrimPrefix(strings.Join(strings.Fields(err.Error()), " "), "team.json: ")})
		var raw struct {
			Members []ipcMember `json:"members"`
		}
		if json.Unmarshal(b, &raw) != nil {
			return report()
		}
		members = raw.Members
	}
	names := map[string]bool{}
	for _, m := range members {
		names[m.Name] = true
	}
	seen := map[string]bool{}
	for _, m := range members {
		cfg, found := memberPolicy(dir, m)
		if cfg == "" || seen[cfg] {
			continue
		}
		seen[cfg] = true
		rel := relTo(dir, cfg)
		var mine []ipc.Finding
		switch {
		case m.IPC != "" && !isRegularFile(cfg):
			mine = []ipc.Finding{{Level: ipc.LevelError, Code: ipc.CodeConfigNotFound, Path: rel,
				Message: "team.json names this file as the member's ipc config, but it is not there"}}
		case m.IPC != "":
			mine = ipc.ValidateConfig(cfg, rel)
		default:
			mine = ipc.ValidateDir(filepath.Dir(cfg), relTo(dir, filepath.Dir(cfg)))
		}
		failed := false
		for _, f := range mine {
			failed = failed || f.Level == ipc.LevelError
		}
		if found && !failed {
			if p, err := ipc.LoadPolicy(cfg); err == nil {
				for _, target := range p.AllowedTargets {
					if !names[target] {
						mine = append(mine, ipc.Finding{Level: ipc.LevelWarning, Code: ipc.CodeUnknownTarget, Path: rel,
							Message: fmt.Sprintf("allowed_targets names %q, which is not a member of the team", target)})
					}
				}
			}
		}
		for _, f := range mine {
			f.Message = fmt.Sprintf("member %q: %s", m.Name, f.Message)
			fs = append(fs, f)
		}
	}
	return report()
}

// CodeLLMKeyUnset is the warning for an llm member whose key variable is
// not set where huddle validate runs: huddle up from here would crash it.
const CodeLLMKeyUnset = "llm-key-unset"

// llmKeyFindings warns of each llm member whose api_key_env names a
// variable that getenv does not find. It names the variable, never a value.
func llmKeyFindings(t *Team, getenv func(string) string) []ipc.Finding {
	var fs []ipc.Finding
	for _, m := range t.Members {
		if m.Runtime.Kind != RuntimeLLM || m.Runtime.APIKeyEnv == "" || getenv(m.Runtime.APIKeyEnv) != "" {
			continue
		}
		fs = append(fs, ipc.Finding{Level: ipc.LevelWarning, Code: CodeLLMKeyUnset, Path: "team.json",
			Message: fmt.Sprintf("member %q: runtime.api_key_env: %s is not set in this environment; huddle up needs it", m.Name, m.Runtime.APIKeyEnv)})
	}
	return fs
}

// memberPolicy is where a member's IPC config is: the file its ipc field
// names, else dir/.puruto-ipc.json; "" when it has neither field. found says
// whether the file is there.
func memberPolicy(teamDir string, m ipcMember) (path string, found bool) {
	// The same rule the runtime follows to load it.
	path = MemberSpec{IPC: m.IPC, Dir: m.Dir}.PolicyPath(teamDir)
	return path, path != "" && isRegularFile(path)
}

// relTo is path as seen from base, or path itself when it cannot be.
func relTo(base, path string) string {
	ab, err1 := filepath.Abs(base)
	ap, err2 := filepath.Abs(path)
	if err1 != nil || err2 != nil {
		return path
	}
	rel, err := filepath.Rel(ab, ap)
	if err != nil {
		return path
	}
	return rel
}

func isRegularFile(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}
