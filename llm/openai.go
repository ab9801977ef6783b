package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// openAIModel speaks the Chat Completions API with tool calls, so it reaches
// OpenAI, OpenRouter, vLLM, Ollama, LM Studio and llama.cpp's server.
type openAIModel struct {
	pc   ProviderConfig
	chat openai.ChatCompletionService
}

func newOpenAIModel(pc ProviderConfig) *openAIModel {
	base := pc.BaseURL
	if base == "" {
		base = "https://api.openai.com/v1/"
	}
	// The service is built without openai.NewClient on purpose: NewClient
	// reads OPENAI_API_KEY, OPENAI_BASE_URL and friends from the
	// environment, and a member must use only what team.json names.
	opts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithHTTPClient(httpClientOf(pc)),
		option.WithMaxRetries(0),
	}
	if pc.APIKey != "" {
		opts = append(opts, option.WithAPIKey(pc.APIKey))
	}
	return &openAIModel{pc: pc, chat: openai.NewChatCompletionService(opts...)}
}

func (m *openAIModel) Turn(ctx context.Context, req Request) (Response, error) {
	res, err := m.chat.New(ctx, m.params(req))
	if err != nil {
		return Response{}, m.mapError(ctx, err)
	}
	if len(res.Choices) == 0 {
		return Response{}, &APIError{Status: 200, Message: "openai: the answer has no choice"}
	}
	choice := res.Choices[0]
	out := Response{
		Text:  choice.Message.Content,
		Usage: Usage{In: res.Usage.PromptTokens, Out: res.Usage.CompletionTokens},
		Stop:  choice.FinishReason,
	}
	for i, tc := range choice.Message.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i) // some local servers give none
		}
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: id, Name: tc.Function.Name, Args: validArgs(tc.Function.Arguments)})
	}
	return out, nil
}

func (m *openAIModel) params(req Request) openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{Model: m.pc.Model}
	if req.MaxTokens > 0 {
		// max_tokens, not max_completion_tokens: Ollama and older local
		// servers know only the first.
		p.MaxTokens = openai.Int(int64(req.MaxTokens))
	}
	if req.System != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.System))
	}
	for _, msg := range req.Messages {
		p.Messages = append(p.Messages, openAIMessage(msg))
	}
	for _, t := range req.Tools {
		var params shared.FunctionParameters
		props, required := schemaOf(t.Params)
		params = shared.FunctionParameters{"type": "object", "properties": props}
		if len(required) > 0 {
			params["required"] = required
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        t.Name,
			Description: openai.String(t.Description),
			Parameters:  params,
		}))
	}
	return p
}

func openAIMessage(msg Message) openai.ChatCompletionMessageParamUnion {
	switch msg.Role {
	case RoleAssistant:
		a := openai.ChatCompletionAssistantMessageParam{}
		if msg.Text != "" || len(msg.ToolCalls) == 0 {
			a.Content.OfString = openai.String(msg.Text) // some servers refuse an assistant turn with neither
		}
		for _, tc := range msg.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID:       tc.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: string(tc.Args)},
				},
			})
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}
	case RoleTool:
		// Chat Completions has no error flag on a tool result: say it.
		if msg.IsError {
			return openai.ToolMessage(toolErrorPrefix+msg.Text, msg.ToolCallID)
		}
		return openai.ToolMessage(msg.Text, msg.ToolCallID)
	default:
		return openai.UserMessage(msg.Text)
	}
}

// toolErrorPrefix marks a refusal or failure in a tool result sent over
// Chat Completions, which has no is_error field.
const toolErrorPrefix = "error: "

func (m *openAIModel) mapError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var e *openai.Error
	if errors.As(err, &e) {
		var header http.Header
		if e.Response != nil {
			header = e.Response.Header
		}
		full := saysContextFull(e.StatusCode, e.Code, e.Message+" "+e.RawJSON())
		return apiError(m.pc, e.StatusCode, header, e.Message, full)
	}
	return transportError(m.pc, err)
}
