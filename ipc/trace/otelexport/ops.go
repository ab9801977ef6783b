package otelexport

import (
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"

	"huddle/ipc/trace"
)

// exportOp exports a member's own step as the GenAI semantic conventions
// name it: a model turn "chat {model}" (CLIENT, its tokens), a work tool
// "execute_tool {tool}" (INTERNAL). Inside an invocation the op is a child
// of the invocation's span, in its chain's trace; otherwise it is in the
// trace of the member's run.
func (e *Export) exportOp(op trace.Op) {
	chain, parent := op.CorrelationID, op.RequestID
	if chain == "" {
		chain, parent = op.Conversation, ""
	}
	if chain == "" || op.End.IsZero() {
		return
	}
	start := op.Start
	if start.IsZero() || start.After(op.End) {
		start = op.End
	}
	id := trace.SpanID(fmt.Sprintf("%s/%s/%s/%s/%d", op.Member, op.Kind, op.CallID, op.Conversation, op.End.UnixNano()))
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", op.Kind),
		attribute.String("gen_ai.agent.name", op.Member),
		attribute.String("huddle.member", op.Member),
	}
	if op.CorrelationID != "" {
		attrs = append(attrs, attribute.String("gen_ai.conversation.id", op.CorrelationID), attribute.String("huddle.request_id", op.RequestID))
	}
	name, kind := op.Kind, oteltrace.SpanKindInternal
	switch op.Kind {
	case trace.OpChat:
		name, kind = "chat "+op.Model, oteltrace.SpanKindClient
		attrs = append(attrs,
			attribute.String("gen_ai.provider.name", op.Provider),
			attribute.String("gen_ai.request.model", op.Model),
			attribute.Int64("gen_ai.usage.input_tokens", op.InTokens),
			attribute.Int64("gen_ai.usage.output_tokens", op.OutTokens))
	case trace.OpTool:
		name = "execute_tool " + op.Tool
		attrs = append(attrs,
			attribute.String("gen_ai.tool.name", op.Tool),
			attribute.String("gen_ai.tool.call.id", op.CallID),
			attribute.String("gen_ai.tool.type", "function"))
	}
	if op.Error != "" {
		attrs = append(attrs, attribute.String("error.type", op.Error))
	}
	_, sp := e.tracer.Start(e.withIDs(chain, id, parent), name, oteltrace.WithTimestamp(start), oteltrace.WithSpanKind(kind),
		oteltrace.WithAttributes(attrs...))
	if op.Error != "" {
		sp.SetStatus(codes.Error, op.Error)
	}
	sp.End(oteltrace.WithTimestamp(op.End))
}
