// MCP's TypeScript SDK as a client of an MCP server (huddle mcp in
// huddle's tests), over stdio ($MCP_STDIO: a JSON array, the command and
// its arguments) or streamable HTTP ($MCP_URL, $MCP_KEY sent as X-API-Key).
// One operation per run; each thing seen is one JSON line on stdout:
//   tools                 the server's capabilities and tools (with taskSupport)
//   call NAME ARGS        tools/call, the result
//   task NAME ARGS        tools/call as a task, as the SDK decides from the
//                         tools/list it read (no task asked explicitly):
//                         every message of callToolStream
//   task-cancel NAME ARGS a task, cancelled once created, read back,
//                         cancelled again (refused), then tasks/list
// ARGS is a JSON object. An error is {"kind":"error"} and exit status 3.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [op, name, rawArgs] = process.argv.slice(2);
const args = rawArgs ? JSON.parse(rawArgs) : {};
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const text = (r) => (r?.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');

let transport;
if (process.env.MCP_STDIO) {
  const [command, ...cmdArgs] = JSON.parse(process.env.MCP_STDIO);
  transport = new StdioClientTransport({ command, args: cmdArgs, stderr: 'inherit', env: { ...process.env } });
} else {
  const headers = process.env.MCP_KEY ? { 'X-API-Key': process.env.MCP_KEY } : {};
  transport = new StreamableHTTPClientTransport(new URL(process.env.MCP_URL), { requestInit: { headers } });
}
const client = new Client({ name: 'mcp-ts-sdk-test', version: '1.0.0' });

try {
  await client.connect(transport);
  // The tools/list the SDK caches decides which tools it calls as tasks.
  const { tools } = await client.listTools();
  switch (op) {
    case 'tools':
      out({ kind: 'tools', protocol: transport.protocolVersion ?? null, capabilities: client.getServerCapabilities(),
        instructions: client.getInstructions() ?? '',
        tools: tools.map((t) => ({ name: t.name, taskSupport: t.execution?.taskSupport ?? null, readOnly: t.annotations?.readOnlyHint ?? false })) });
      break;
    case 'call': {
      const r = await client.callTool({ name, arguments: args });
      out({ kind: 'result', isError: r.isError ?? false, text: text(r), structured: r.structuredContent ?? null });
      break;
    }
    case 'task':
      for await (const m of client.experimental.tasks.callToolStream({ name, arguments: args })) {
        switch (m.type) {
          case 'taskCreated': out({ kind: 'taskCreated', taskId: m.task.taskId, status: m.task.status, ttl: m.task.ttl }); break;
          case 'taskStatus': out({ kind: 'taskStatus', taskId: m.task.taskId, status: m.task.status, statusMessage: m.task.statusMessage ?? '' }); break;
          case 'result': out({ kind: 'result', isError: m.result.isError ?? false, text: text(m.result), structured: m.result.structuredContent ?? null,
            related: m.result._meta?.['io.modelcontextprotocol/related-task']?.taskId ?? null }); break;
          case 'error': out({ kind: 'error', message: String(m.error?.message ?? m.error) }); break;
        }
      }
      break;
    case 'task-cancel':
      for await (const m of client.experimental.tasks.callToolStream({ name, arguments: args })) {
        if (m.type !== 'taskCreated') continue;
        const cancelled = await client.experimental.tasks.cancelTask(m.task.taskId);
        out({ kind: 'cancelled', taskId: cancelled.taskId, status: cancelled.status });
        const again = await client.experimental.tasks.getTask(m.task.taskId);
        out({ kind: 'taskStatus', taskId: again.taskId, status: again.status, statusMessage: again.statusMessage ?? '' });
        try {
          await client.experimental.tasks.cancelTask(m.task.taskId);
          out({ kind: 'cancelledTwice' });
        } catch (e) {
          out({ kind: 'error', code: e?.code ?? null, message: String(e?.message ?? e) });
        }
        const listed = await client.experimental.tasks.listTasks();
        out({ kind: 'tasks', tasks: listed.tasks.map((t) => ({ taskId: t.taskId, status: t.status })) });
        break;
      }
      break;
    default:
      throw new Error(`unknown operation ${op}`);
  }
  await client.close();
} catch (e) {
  out({ kind: 'error', code: e?.code ?? null, message: String(e?.message ?? e) });
  await client.close().catch(() => {});
  process.exit(3);
}
