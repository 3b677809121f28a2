// An agent served by the official A2A JS SDK (@a2a-js/sdk's
// DefaultRequestHandler behind its express handlers) as a `type: a2a`
// member of an agentpool team: `agentpool run` streams its answer in the
// member's child session, and the team goes on with it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { randomUUID } from 'node:crypto';

import express from 'express';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';

const here = path.dirname(fileURLToPath(import.meta.url));
const bin = process.env.AGENTPOOL_BIN ?? path.join(here, '../../../bin/agentpool-race');

// echo answers "Echo: <the prompt>" in two artifact chunks, after a
// working status, as a streaming A2A agent does.
const echo = {
  async execute(ctx, bus) {
    const base = { taskId: ctx.taskId, contextId: ctx.contextId };
    if (!ctx.task) {
      bus.publish({ kind: 'task', id: ctx.taskId, contextId: ctx.contextId, status: { state: 'submitted' }, history: [ctx.userMessage] });
    }
    const text = ctx.userMessage.parts.filter((p) => p.kind === 'text').map((p) => p.text).join('');
    bus.publish({ kind: 'status-update', ...base, final: false,
      status: { state: 'working', message: { kind: 'message', messageId: randomUUID(), role: 'agent', parts: [{ kind: 'text', text: 'thinking' }] } } });
    const artifactId = randomUUID();
    bus.publish({ kind: 'artifact-update', ...base, artifact: { artifactId, name: 'answer', parts: [{ kind: 'text', text: 'Echo: ' }] } });
    bus.publish({ kind: 'artifact-update', ...base, append: true, lastChunk: true, artifact: { artifactId, parts: [{ kind: 'text', text }] } });
    bus.publish({ kind: 'status-update', ...base, final: true, status: { state: 'completed' } });
    bus.finished();
  },
  async cancelTask() {},
};

let http;
let dir;

before(async () => {
  assert.ok(existsSync(bin), `AGENTPOOL_BIN ${bin} does not exist (run make build-race)`);
  const app = express();
  http = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const url = `http://127.0.0.1:${http.address().port}`;
  const card = {
    name: 'echo', description: 'Echoes the prompt.', url: `${url}/a2a`, version: '1.0.0', protocolVersion: '0.3.0',
    preferredTransport: 'JSONRPC', capabilities: { streaming: true }, defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'], skills: [{ id: 'echo', name: 'echo', description: 'echo', tags: [] }],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), echo);
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  app.use('/a2a', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  dir = mkdtempSync(path.join(tmpdir(), 'a2a-member-'));
  writeFileSync(path.join(dir, 'agentpool.yaml'), `
default_agent: lead
agents:
  lead:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: crew, prompt: "hello from agentpool", description: crew}}]
        - text: "Lead done."
    tools: [subagent]
  echo:
    type: a2a
    url: ${url}
  checker:
    model: {type: scripted, turns: [{text: "Checked."}]}
teams:
  crew: {mode: parallel, members: [echo, checker]}
`);
});

after(async () => {
  await new Promise((resolve) => http?.close(resolve));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('a JS SDK agent is a team member: its answer streams in its child session', async () => {
  const { stdout } = await promisify(execFile)(bin, ['run', '--db', ':memory:', '--output', 'jsonl', 'Go.'], {
    cwd: dir, env: { ...process.env, HOME: dir, XDG_DATA_HOME: dir },
  });
  const events = stdout.trim().split('\n').map((l) => JSON.parse(l));
  // A descendant's event is wrapped once: {event_kind: subagent, child_session_id, event}.
  const inner = events.filter((e) => e.event_kind === 'subagent');
  const start = inner.find((e) => e.event.event_kind === 'spawn_session_start' && e.event.source_name === 'echo');
  assert.ok(start, 'the echo member was spawned');
  const sid = start.event.child_session_id;
  const own = inner.filter((e) => e.child_session_id === sid).map((e) => e.event);
  assert.equal(own[0].event_kind, 'run_started');
  assert.ok(own.some((e) => e.event_kind === 'custom' && e.event_type === 'a2a_status' && e.event_data.text === 'thinking'),
    'the working status is an a2a_status event');
  const deltas = own.filter((e) => e.event_kind === 'part_delta').map((e) => e.delta.content_delta);
  assert.deepEqual(deltas, ['Echo: ', 'hello from agentpool'], 'the answer streamed chunk by chunk');
  assert.equal(own.at(-1).event_kind, 'stream_complete');
  assert.equal(own.at(-1).message.content, 'Echo: hello from agentpool');
  const end = inner.find((e) => e.event.event_kind === 'spawn_session_end' && e.event.source_name === 'echo');
  assert.equal(end?.event.stop_reason, 'completed');
  assert.equal(events.at(-1).event_kind, 'stream_complete');
  assert.equal(events.at(-1).message.content, 'Lead done.');
});
