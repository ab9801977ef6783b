// An A2A agent made with the A2A project's JavaScript SDK (its server:
// DefaultRequestHandler, jsonRpcHandler, agentCardHandler), for huddle's
// tests to call as a remote agent. It prints {"kind":"listening","url"}
// once it listens on loopback, then, for each task it runs, a line with
// what the call carried: the text, the contextId, the metadata and the
// traceparent header. Each task answers one artifact, "js agent heard:
// TEXT", with those as data. A message whose text starts with "pause"
// goes INPUT_REQUIRED first (where the SDK's server closes a stream)
// and completes on its own a moment later.
//   node a2a-agent.mjs
import express from 'express';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { Role, TaskState } from '@a2a-js/sdk';

const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const text = (s) => ({ content: { $case: 'text', value: s }, metadata: undefined, filename: '', mediaType: '' });
const data = (v) => ({ content: { $case: 'data', value: v }, metadata: undefined, filename: '', mediaType: 'application/json' });
const message = (taskId, contextId, parts) => ({ messageId: `m-${Math.random().toString(16).slice(2)}`, taskId, contextId,
  role: Role.ROLE_AGENT, parts, metadata: undefined, extensions: [], referenceTaskIds: [] });
const status = (taskId, contextId, state, msg) => AgentEvent.statusUpdate({ taskId, contextId,
  status: { state, message: msg, timestamp: new Date().toISOString() }, metadata: undefined });

const executor = {
  async execute(ctx, bus) {
    const { taskId, contextId } = ctx;
    const said = ctx.userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('\n');
    const headers = ctx.context?.state?.get?.('headers') ?? {};
    const traceparent = headers.traceparent ?? headers.Traceparent ?? null;
    const seen = { text: said, contextId, metadata: ctx.request.metadata ?? null, traceparent };
    out({ kind: 'task', taskId, ...seen });
    bus.publish(AgentEvent.task({ id: taskId, contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: undefined },
      artifacts: [], history: [ctx.userMessage], metadata: undefined }));
    bus.publish(status(taskId, contextId, TaskState.TASK_STATE_WORKING, undefined));
    const finish = () => {
      bus.publish(AgentEvent.artifactUpdate({ taskId, contextId, append: false, lastChunk: true, metadata: undefined,
        artifact: { artifactId: 'answer', name: 'answer', description: '', parts: [text(`js agent heard: ${said}`), data(seen)], metadata: undefined, extensions: [] } }));
      bus.publish(status(taskId, contextId, TaskState.TASK_STATE_COMPLETED, undefined));
      bus.finished();
    };
    if (said.startsWith('pause')) {
      bus.publish(status(taskId, contextId, TaskState.TASK_STATE_INPUT_REQUIRED, message(taskId, contextId, [text('a moment, please')])));
      setTimeout(finish, 300);
      return;
    }
    finish();
  },
  async cancelTask(taskId, bus) {
    bus.publish(status(taskId, '', TaskState.TASK_STATE_CANCELED, undefined));
    bus.finished();
  },
};

const app = express();
const server = app.listen(0, '127.0.0.1', () => {
  const url = `http://127.0.0.1:${server.address().port}`;
  const card = {
    name: 'js-agent', description: 'An A2A agent of the JavaScript SDK, for huddle tests', version: '1.0.0',
    supportedInterfaces: [{ url: `${url}/a2a`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    provider: undefined, documentationUrl: undefined, iconUrl: undefined,
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {}, securityRequirements: [], defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain', 'application/json'],
    skills: [{ id: 'echo', name: 'echo', description: 'says what it heard', tags: ['test'], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: [],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  app.use('/a2a', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  out({ kind: 'listening', url });
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
