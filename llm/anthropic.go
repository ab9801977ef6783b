package llm

import (
	"context"
	"errors"
	"net/http"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// anthropicDefaultMaxTokens is the output bound of a turn when the member
// sets none: the Messages API requires one.
const anthropicDefaultMaxTokens = 8192

// anthropicModel speaks the Anthropic Messages API with tool use.
type anthropicModel struct {
	pc       ProviderConfig
	messages anthropic.MessageService
}

func newAnthropicModel(pc ProviderConfig) *anthropicModel {
	// WithoutEnvironmentDefaults: no ANTHROPIC_API_KEY, profile or
	// federation from the environment; a member uses only what team.json
	// names.
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithHTTPClient(httpClientOf(pc)),
		option.WithMaxRetries(0),
	}
	if pc.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(pc.BaseURL))
	}
	if pc.APIKey != "" {
		opts = append(opts, option.WithAPIKey(pc.APIKey))
	}
	client := anthropic.NewClient(opts...)
	return &anthropicModel{pc: pc, messages: client.Messages}
}

func (m *anthropicModel) Turn(ctx context.Context, req Request) (Response, error) {
	res, err := m.messages.New(ctx, m.params(req))
	if err != nil {
		return Response{}, m.mapError(ctx, err)
	}
	out := Response{
		Usage: Usage{In: res.Usage.InputTokens + res.Usage.CacheReadInputTokens + res.Usage.CacheCreationInputTokens, Out: res.Usage.OutputTokens},
		Stop:  string(res.StopReason),
	}
	for _, block := range res.Content {
		switch block.Type {
		case "text":
			out.Text += block.Text
		case "tool_use":
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: block.ID, Name: block.Name, Args: validArgs(string(block.Input))})
		}
	}
	if res.StopReason == anthropic.StopReasonModelContextWindowExceeded && out.Text == "" && len(out.ToolCalls) == 0 {
		return Response{}, &APIError{Status: http.StatusOK, ContextFull: true, Message: "anthropic: the conversation no longer fits the context window"}
	}
	return out, nil
}

func (m *anthropicModel) params(req Request) anthropic.MessageNewParams {
	p := anthropic.MessageNewParams{Model: m.pc.Model, MaxTokens: anthropicDefaultMaxTokens}
	if req.MaxTokens > 0 {
		p.MaxTokens = int64(req.MaxTokens)
	}
	if req.System != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	p.Messages = anthropicMessages(req.Messages)
	for _, t := range req.Tools {
		props, required := schemaOf(t.Params)
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
			Name:        t.Name,
			Description: anthropic.String(t.Description),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: props, Required: required},
		}})
	}
	return p
}

// anthropicMessages maps the conversation, folding tool results and user
// text that follow each other into one user message: the Messages API wants
// the roles to alternate and the results right after the tool use.
func anthropicMessages(msgs []Message) []anthropic.MessageParam {
	var out []anthropic.MessageParam
	for _, msg := range msgs {
		if msg.Role == RoleAssistant {
			var blocks []anthropic.ContentBlockParamUnion
			if msg.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(msg.Text))
			}
			for _, tc := range msg.ToolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, toolInput(tc.Args), tc.Name))
			}
			if len(blocks) == 0 {
				blocks = append(blocks, anthropic.NewTextBlock("(no answer)"))
			}
			out = append(out, anthropic.NewAssistantMessage(blocks...))
			continue
		}
		var block anthropic.ContentBlockParamUnion
		if msg.Role == RoleTool {
			block = anthropic.NewToolResultBlock(msg.ToolCallID, msg.Text, msg.IsError)
		} else {
			block = anthropic.NewTextBlock(msg.Text)
		}
		if n := len(out); n > 0 && out[n-1].OfUser != nil {
			out[n-1].OfUser.Content = append(out[n-1].OfUser.Content, block)
			continue
		}
		out = append(out, anthropic.NewUserMessage(block))
	}
	return out
}

// toolInput is the tool_use input sent back: an object, even when the model
// had produced something else (the Messages API refuses anything else).
func toolInput(args []byte) any {
	if len(args) > 0 && args[0] == '{' {
		return jsonRaw(args)
	}
	return map[string]any{}
}

type jsonRaw []byte

func (j jsonRaw) MarshalJSON() ([]byte, error) { return j, nil }

func (m *anthropicModel) mapError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var e *anthropic.Error
	if errors.As(err, &e) {
		var header http.Header
		if e.Response != nil {
			header = e.Response.Header
		}
		full := saysContextFull(e.StatusCode, string(e.ErrorCode()), e.Message)
		return apiError(m.pc, e.StatusCode, header, e.Message, full)
	}
	return transportError(m.pc, err)
}
