// Drives `agentpool serve a2a` with the official A2A JS SDK (@a2a-js/sdk
// 0.3.14, protocol 0.3): agent cards, message/send, message/stream,
// tasks/get and tasks/cancel, and the delegations inside a task as status
// updates and artifacts.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';

import { ClientFactory, DefaultAgentCardResolver } from '@a2a-js/sdk/client';

import { serve } from '../lib/serve.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const bin = process.env.AGENTPOOL_BIN ?? path.join(here, '../../../bin/agentpool-race');
const manifest = path.join(here, 'fixtures/pool.yaml');

let server;

before(async () => {
  assert.ok(existsSync(bin), `AGENTPOOL_BIN ${bin} does not exist (run make build-race)`);
  server = await serve(bin, 'a2a', ['--db', ':memory:', '-c', manifest]);
});

after(async () => {
  await server?.stop();
});

const message = (text, extra = {}) => ({
  message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text }], ...extra },
});

const textOf = (parts) => (parts ?? []).filter((p) => p.kind === 'text').map((p) => p.text).join('');

// The SDK resolves the card's path against the URL: an agent's URL ends in
// a slash (new URL('.well-known/agent-card.json', base)).
const client = (agentPath = '') => new ClientFactory().createFromUrl(`${server.url}${agentPath}/`);

test('agent cards at the well-known paths', async () => {
  const resolver = new DefaultAgentCardResolver();
  const root = await resolver.resolve(`${server.url}/`);
  assert.equal(root.name, 'lead');
  assert.equal(root.url, `${server.url}/`);
  assert.equal(root.protocolVersion, '0.3.0');
  assert.equal(root.preferredTransport, 'JSONRPC');
  assert.equal(root.capabilities.streaming, true);
  const squad = await resolver.resolve(`${server.url}/agents/squad/`);
  assert.equal(squad.name, 'squad');
  assert.equal(squad.url, `${server.url}/agents/squad`);
  assert.equal(squad.description, 'Researches and criticizes.');
});

test('message/send runs the default agent; each delegation is an artifact; tasks/get returns the task', async () => {
  const c = await client();
  const task = await c.sendMessage(message('Research nested teams.'));
  assert.equal(task.kind, 'task');
  assert.equal(task.status.state, 'completed', JSON.stringify(task.status));
  assert.match(textOf(task.status.message?.parts), /squad researched nested teams/);
  const names = new Map(task.artifacts.map((a) => [a.name, textOf(a.parts)]));
  for (const name of ['response', 'squad', 'scout', 'critic', 'checker']) {
    assert.ok(names.get(name), `an artifact named ${name}; got ${[...names.keys()]}`);
  }
  assert.equal(names.get('critic'), 'Looks right.');
  const again = await c.getTask({ id: task.id });
  assert.equal(again.status.state, 'completed');
  assert.equal(again.artifacts.length, task.artifacts.length);
});

test('message/stream shows each delegation as status updates, then the final status', async () => {
  const c = await client();
  const events = [];
  for await (const ev of c.sendMessageStream(message('Research nested teams.'))) events.push(ev);
  assert.equal(events[0].kind, 'task', 'the task comes first');
  const meta = events.filter((e) => e.kind === 'status-update').map((e) => e.metadata?.agentpool ?? {});
  assert.ok(meta[0].session_id, 'the first working status names the agentpool session');
  const started = meta.filter((m) => m.event === 'spawn_session_start').map((m) => `${m.source_name}@${m.depth}`).sort();
  const ended = meta.filter((m) => m.event === 'spawn_session_end').map((m) => `${m.source_name}:${m.stop_reason}`).sort();
  assert.deepEqual(started, ['checker@3', 'critic@2', 'scout@2', 'squad@1']);
  assert.deepEqual(ended, ['checker:completed', 'critic:completed', 'scout:completed', 'squad:completed']);
  const last = events.at(-1);
  assert.equal(last.kind, 'status-update');
  assert.equal(last.final, true);
  assert.equal(last.status.state, 'completed');
  assert.ok(events.some((e) => e.kind === 'artifact-update' && e.artifact.name === 'response'), 'the answer streams as an artifact');

  // The same context continues the session.
  const next = await c.sendMessage(message('And again.', { contextId: last.contextId }));
  assert.equal(next.status.state, 'completed');
  assert.equal(next.metadata?.agentpool?.session_id, meta[0].session_id, 'same context, same session');
});

test('tasks/cancel ends a streaming task canceled', async () => {
  const c = await client('/agents/slow');
  let taskId;
  let final;
  for await (const ev of c.sendMessageStream(message('Count.'))) {
    if (ev.kind === 'task') taskId = ev.id;
    if (ev.kind === 'artifact-update' && taskId && !final) {
      // The answer is streaming: cancel it.
      const t = await c.cancelTask({ id: taskId });
      assert.equal(t.status.state, 'canceled');
      final = t;
    }
    if (ev.kind === 'status-update' && ev.final) {
      assert.equal(ev.status.state, 'canceled');
      break;
    }
  }
  assert.ok(final, 'the task streamed before it was cancelled');
  const t = await c.getTask({ id: taskId });
  assert.equal(t.status.state, 'canceled');
});
