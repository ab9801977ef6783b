package a2a

import (
	"encoding/json"
	"fmt"
)

// The JSON-RPC methods of the v1.0 binding (the spec's §9.4).
const (
	MethodSend       = "SendMessage"
	MethodStream     = "SendStreamingMessage"
	MethodGet        = "GetTask"
	MethodList       = "ListTasks"
	MethodCancel     = "CancelTask"
	MethodSubscribe  = "SubscribeToTask"
	MethodPushCreate = "CreateTaskPushNotificationConfig"
	MethodPushGet    = "GetTaskPushNotificationConfig"
	MethodPushList   = "ListTaskPushNotificationConfigs"
	MethodPushDelete = "DeleteTaskPushNotificationConfig"
	MethodExtCard    = "GetExtendedAgentCard"
)

// Error codes: JSON-RPC's own and A2A's (the spec's §5.4).
const (
	CodeParse                  = -32700
	CodeInvalidRequest         = -32600
	CodeMethodNotFound         = -32601
	CodeInvalidParams          = -32602
	CodeInternal               = -32603
	CodeTaskNotFound           = -32001
	CodeTaskNotCancelable      = -32002
	CodePushNotSupported       = -32003
	CodeUnsupportedOperation   = -32004
	CodeContentTypeUnsupported = -32005
	CodeInvalidAgentResponse   = -32006
	CodeExtCardNotConfigured   = -32007
	CodeExtensionRequired      = -32008
	CodeVersionNotSupported    = -32009
)

// rpcRequest is a JSON-RPC 2.0 request.
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// rpcResponse is a JSON-RPC 2.0 response: a result or an error.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// Error is a JSON-RPC error object. Data holds detail objects, each with an
// "@type" (the spec's §9.5): huddle's are google.rpc.ErrorInfo, whose
// reason is a Puruto code or A2A's error name and whose metadata says why.
type Error struct {
	Code    int              `json:"code"`
	Message string           `json:"message"`
	Data    []map[string]any `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("a2a: %s (%d)", e.Message, e.Code) }

// Reason is the ErrorInfo reason of the error's first detail: a Puruto
// code such as DENIED, or A2A's name of the error; "" when it has none.
func (e *Error) Reason() string {
	for _, d := range e.Data {
		if r, ok := d["reason"].(string); ok {
			return r
		}
	}
	return ""
}

// errorInfoType is the @type of google.rpc.ErrorInfo in ProtoJSON's Any.
const errorInfoType = "type.googleapis.com/google.rpc.ErrorInfo"

// rpcError builds an error with one ErrorInfo detail: reason, domain
// huddle, and metadata (the spec wants string values: they are made so).
func rpcError(code int, reason, message string, metadata map[string]any) *Error {
	info := map[string]any{"@type": errorInfoType, "reason": reason, "domain": "huddle"}
	if len(metadata) > 0 {
		md := make(map[string]string, len(metadata))
		for k, v := range metadata {
			if s, ok := v.(string); ok {
				md[k] = s
			} else {
				b, _ := json.Marshal(v)
				md[k] = string(b)
			}
		}
		info["metadata"] = md
	}
	return &Error{Code: code, Message: message, Data: []map[string]any{info}}
}

func errTaskNotFound(id string) *Error {
	return rpcError(CodeTaskNotFound, "TASK_NOT_FOUND", "task not found: "+id, map[string]any{"taskId": id})
}

func errInvalidParams(field, why string) *Error {
	return rpcError(CodeInvalidParams, "INVALID_PARAMS", "invalid parameters: "+field+": "+why, map[string]any{"field": field})
}

func errUnsupported(why string) *Error {
	return rpcError(CodeUnsupportedOperation, "UNSUPPORTED_OPERATION", why, nil)
}
