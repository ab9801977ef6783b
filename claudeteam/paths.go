package claudeteam

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// LeadName is the name Claude Code gives a team's lead, in config.json and
// as the sender of what the lead writes.
const LeadName = "team-lead"

// DefaultRoot is Claude Code's configuration directory: $CLAUDE_CONFIG_DIR,
// else ~/.claude.
func DefaultRoot() (string, error) {
	if d := os.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("claude root: %w", err)
	}
	return filepath.Join(home, ".claude"), nil
}

// CheckName refuses a team or member name that would not stay one path
// element under its directory.
func CheckName(what, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s name is empty", what)
	case name == "." || name == "..", strings.HasPrefix(name, "."):
		return fmt.Errorf("%s name %q: a name may not start with a dot", what, name)
	case strings.ContainsAny(name, "/\\\x00"):
		return fmt.Errorf("%s name %q: a name may not hold a slash or a NUL", what, name)
	case len(name) > 255:
		return fmt.Errorf("%s name is longer than 255 bytes", what)
	}
	return nil
}

func teamDir(root, team string) string    { return filepath.Join(root, "teams", team) }
func configPath(root, team string) string { return filepath.Join(teamDir(root, team), "config.json") }
func inboxesDir(root, team string) string { return filepath.Join(teamDir(root, team), "inboxes") }
func tasksDir(root, team string) string   { return filepath.Join(root, "tasks", team) }

// InboxPath is the inbox file of member in team.
func InboxPath(root, team, member string) string {
	return filepath.Join(inboxesDir(root, team), member+".json")
}

// lockPath is the lock Claude Code takes on an inbox: a directory made by
// mkdir (proper-lockfile), next to the file.
func lockPath(inbox string) string { return inbox + ".lock" }

// Teams lists the teams under root: the directories of ROOT/teams that hold
// a config.json, sorted. A team Claude Code is removing (it renames the
// directory <team>.deleted-<uuid> first) is none.
func Teams(root string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(root, "teams"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claude teams: %w", err)
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() || CheckName("team", e.Name()) != nil || strings.Contains(e.Name(), ".deleted-") {
			continue
		}
		if _, err := os.Stat(configPath(root, e.Name())); err == nil {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out, nil
}

// PickTeam returns team when given (checked: under root, or in the
// journal j), else the one team under root; with none or several it says
// which there are.
func PickTeam(root, team string, j Journal) (string, error) {
	if team != "" {
		if err := CheckName("team", team); err != nil {
			return "", err
		}
		gone, _ := j.Teams()
		if _, err := os.Stat(teamDir(root, team)); err != nil && !slices.Contains(gone, team) {
			teams, _ := Teams(root)
			return "", fmt.Errorf("no Claude Code team %q under %s (teams: %s) nor in huddle's journal", team, root, listOrNone(teams))
		}
		return team, nil
	}
	teams, err := Teams(root)
	if err != nil {
		return "", err
	}
	switch len(teams) {
	case 1:
		return teams[0], nil
	case 0:
		return "", fmt.Errorf("no Claude Code team under %s (a team is teams/NAME/config.json)", root)
	}
	return "", fmt.Errorf("%d Claude Code teams under %s, name one: %s", len(teams), root, strings.Join(teams, ", "))
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
