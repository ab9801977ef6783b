// The A2A project's JavaScript SDK as a client of an A2A agent (huddle
// serve --a2a in huddle's tests). One operation per run; every event and
// answer is printed as one JSON line on stdout, for the Go test to read
// as it comes:
//   stream URL SKILL PROMPT   SendStreamingMessage, each event
//   send URL SKILL PROMPT     SendMessage (blocking), the task
//   get URL TASK              GetTask
//   cancel URL TASK           CancelTask
//   list URL                  ListTasks
//   subscribe URL TASK        SubscribeToTask, each event
//   card URL                  the Agent Card as the SDK reads it
// SKILL "-" sends no skill_id. $A2A_KEY, when set, is sent as X-API-Key;
// $A2A_HOP sets metadata hop. An error is a line {"kind":"error",...} and
// exit status 3.
import { ClientFactory } from '@a2a-js/sdk/client';
import { Role, TaskState } from '@a2a-js/sdk';
import { randomUUID } from 'node:crypto';

const [op, url, a, b] = process.argv.slice(2);
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const options = process.env.A2A_KEY ? { serviceParameters: { 'X-API-Key': process.env.A2A_KEY } } : undefined;

const stateName = (s) => TaskState[s] ?? String(s);
const parts = (ps) => (ps ?? []).map((p) => {
  const c = p.content;
  if (!c) return { none: true };
  if (c.$case === 'data') return { data: c.value };
  return { [c.$case]: c.$case === 'raw' ? Buffer.from(c.value).toString('base64') : c.value };
});
const status = (st) => ({
  state: stateName(st?.state),
  message: st?.message ? { parts: parts(st.message.parts), metadata: st.message.metadata ?? null, extensions: st.message.extensions ?? [] } : null,
});
const task = (t) => ({ id: t.id, contextId: t.contextId, ...status(t.status),
  artifacts: (t.artifacts ?? []).map((x) => ({ artifactId: x.artifactId, parts: parts(x.parts) })),
  history: (t.history ?? []).length, metadata: t.metadata ?? null });

function event(ev) {
  const p = ev.payload;
  switch (p?.$case) {
    case 'task': return { kind: 'task', ...task(p.value) };
    case 'statusUpdate': return { kind: 'status', taskId: p.value.taskId, contextId: p.value.contextId, ...status(p.value.status) };
    case 'artifactUpdate': return { kind: 'artifact', taskId: p.value.taskId, artifactId: p.value.artifact.artifactId, parts: parts(p.value.artifact.parts) };
    case 'message': return { kind: 'message', parts: parts(p.value.parts) };
  }
  return { kind: 'unknown', raw: ev };
}

function message(skill, prompt) {
  const metadata = {};
  if (skill !== '-') metadata.skill_id = skill;
  if (process.env.A2A_HOP) metadata.hop = Number(process.env.A2A_HOP);
  return {
    message: { messageId: randomUUID(), role: Role.ROLE_USER, parts: [{ content: { $case: 'text', value: prompt } }] },
    metadata,
  };
}

try {
  const client = await new ClientFactory().createFromUrl(url);
  switch (op) {
    case 'card': {
      const card = await client.getAgentCard();
      out({ kind: 'card', name: card.name, skills: card.skills.map((s) => s.id), streaming: card.capabilities?.streaming ?? false,
        extensions: (card.capabilities?.extensions ?? []).map((e) => e.uri), protocol: client.protocolVersion,
        interfaces: card.supportedInterfaces.map((i) => `${i.protocolBinding} ${i.protocolVersion}`) });
      break;
    }
    case 'stream':
      for await (const ev of client.sendMessageStream(message(a, b), options)) out(event(ev));
      out({ kind: 'end' });
      break;
    case 'subscribe':
      for await (const ev of client.resubscribeTask({ id: a }, options)) out(event(ev));
      out({ kind: 'end' });
      break;
    case 'send': {
      const r = await client.sendMessage(message(a, b), options);
      out('messageId' in r ? { kind: 'message', parts: parts(r.parts) } : { kind: 'task', ...task(r) });
      break;
    }
    case 'get':
      out({ kind: 'task', ...task(await client.getTask({ id: a }, options)) });
      break;
    case 'cancel':
      out({ kind: 'task', ...task(await client.cancelTask({ id: a }, options)) });
      break;
    case 'list': {
      const r = await client.listTasks({ status: TaskState.TASK_STATE_UNSPECIFIED }, options);
      out({ kind: 'list', total: r.totalSize, tasks: r.tasks.map(task) });
      break;
    }
    default:
      throw new Error(`unknown operation ${op}`);
  }
} catch (e) {
  out({ kind: 'error', name: e?.constructor?.name ?? 'Error', code: e?.code ?? null, message: String(e?.message ?? e) });
  process.exit(3);
}
