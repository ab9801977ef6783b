// Package mcpserve is huddle mcp (docs/doors.md): a team as MCP tools for
// any MCP client, over stdio or streamable HTTP, built on the official Go
// SDK. A call to a member's action is one invocation behind the plan gate
// (serve.A2ABackend), and may be an MCP task (2025-11-25, which the SDK
// does not implement: this package adds it) that is input_required while
// the member's plan waits for the lead. Deciding a plan is off unless the
// lead allows a caller.
package mcpserve
