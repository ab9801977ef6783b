package claudeteam

import (
	"encoding/json"
	"fmt"
	"os"
)

// Config is a team's config.json, as far as huddle reads it.
type Config struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	CreatedAt   int64          `json:"createdAt,omitempty"`
	LeadAgentID string         `json:"leadAgentId,omitempty"`
	Members     []ConfigMember `json:"members"`
}

// ConfigMember is one entry of config.json's members.
type ConfigMember struct {
	AgentID          string `json:"agentId,omitempty"`
	Name             string `json:"name"`
	AgentType        string `json:"agentType,omitempty"`
	Model            string `json:"model,omitempty"`
	Color            string `json:"color,omitempty"`
	Cwd              string `json:"cwd,omitempty"`
	BackendType      string `json:"backendType,omitempty"`
	PlanModeRequired bool   `json:"planModeRequired,omitempty"`
	IsActive         *bool  `json:"isActive,omitempty"`
}

// ReadConfig reads ROOT/teams/<team>/config.json.
func ReadConfig(root, team string) (Config, error) {
	var c Config
	b, err := os.ReadFile(configPath(root, team))
	if err != nil {
		return c, fmt.Errorf("config.json: %w", err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("config.json is not valid JSON (being rewritten?): %w", err)
	}
	return c, nil
}

// member is the entry called name, if any.
func (c *Config) member(name string) (ConfigMember, bool) {
	for _, m := range c.Members {
		if m.Name == name {
			return m, true
		}
	}
	return ConfigMember{}, false
}
