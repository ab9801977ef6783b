package a2a

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Card is the Agent Card this server publishes, its interfaces at
// baseURL (scheme and host): the v1.0 JSON-RPC endpoint, and the v0.3
// one (the same URL) when the server serves it. Each skill is a member's
// action the policy lets a caller reach, its id the metadata skill_id a
// message names.
func (s *Server) Card(baseURL string) AgentCard {
	endpoint := s.cfg.URL
	if endpoint == "" {
		endpoint = strings.TrimRight(baseURL, "/") + s.cfg.Path
	}
	desc := s.cfg.Description
	if desc == "" {
		desc = "A huddle team: each skill is a member's action, run as a Puruto invocation under the team's policy."
	}
	desc += fmt.Sprintf(" Name the skill in the message's or the request's metadata as %q (one of the skill ids below); "+
		"metadata %q (without keys), %q, %q and %q are the caller, the chain's depth and parent, and the timeout. "+
		"A task whose member's plan waits for huddle's lead is TASK_STATE_INPUT_REQUIRED with the plan as a data part "+
		"(extension %s); only the lead decides it, and the task moves on by itself.",
		MetaSkill, MetaCaller, MetaHop, MetaParent, MetaTimeout, PlanApprovalExtension)
	card := AgentCard{
		Name: s.cfg.Name, Description: desc, Version: s.cfg.Version,
		SupportedInterfaces: []AgentInterface{{URL: endpoint, ProtocolBinding: BindingJSONRPC, ProtocolVersion: Version}},
		Capabilities: AgentCapabilities{Streaming: true, Extensions: []AgentExtension{{
			URI:         PlanApprovalExtension,
			Description: "TASK_STATE_INPUT_REQUIRED while the member's plan waits for huddle's lead: the status message carries the plan (a data part) and " + PendingApprovalKey + "; the lead's approval, rejection (a revised plan follows) or the plan's expiry moves the task on. A caller cannot decide.",
			Params:      map[string]any{"decidedBy": "huddle's lead", "clientDecisions": false},
		}}},
		DefaultInputModes:  []string{"text/plain", "application/json"},
		DefaultOutputModes: []string{"text/plain", "application/json"},
		Skills:             []AgentSkill{},
	}
	if s.cfg.Legacy != nil {
		card.SupportedInterfaces = append(card.SupportedInterfaces, AgentInterface{URL: endpoint, ProtocolBinding: BindingJSONRPC, ProtocolVersion: LegacyVersion})
		card.URL, card.ProtocolVersion, card.PreferredTransport = endpoint, "0.3.0", BindingJSONRPC
	}
	if s.cfg.Keys != nil {
		scheme := SecurityScheme{APIKey: &APIKeySecurityScheme{
			Description: "huddle serve's API keys (--api-keys-file): the key decides who the caller is", Location: "header", Name: "X-API-Key"}}
		if s.cfg.Legacy != nil {
			scheme.Type, scheme.In, scheme.Name = "apiKey", "header", "X-API-Key"
			card.Security = []map[string][]string{{"apiKey": {}}}
		}
		card.SecuritySchemes = map[string]SecurityScheme{"apiKey": scheme}
		card.SecurityReqs = []SecurityRequirement{{Schemes: map[string]StringList{"apiKey": {List: []string{}}}}}
	}
	for _, sk := range s.cfg.Backend.Skills() {
		tags := sk.Tags
		if len(tags) == 0 {
			tags = []string{"huddle"}
		}
		card.Skills = append(card.Skills, AgentSkill{ID: sk.ID, Name: sk.Name, Description: sk.Description, Tags: tags,
			Examples: []string{fmt.Sprintf(`{"message":{"role":"ROLE_USER","parts":[{"text":"…"}],"messageId":"…"},"metadata":{"%s":"%s"}}`, MetaSkill, sk.ID)}})
	}
	return card
}

// serveCard answers the Agent Card, cacheable for a minute (the roster can
// change), with an ETag of its content.
func (s *Server) serveCard(w http.ResponseWriter, r *http.Request) {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	b, err := json.Marshal(s.Card(scheme + "://" + r.Host))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	sum := sha256.Sum256(b)
	etag := `"` + hex.EncodeToString(sum[:8]) + `"`
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "max-age=60")
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(b, '\n')) // the client went away: nobody to tell
}
