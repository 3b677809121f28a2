// Issue 34's "done when" on the OpenCode server API: a manifest's
// parallel team of a native agent and the real `opencode acp` (offline:
// ../lib/opencode-team.js), prompted through `agentpool serve opencode`
// with the real SDK (@opencode-ai/sdk v2): both members are child
// sessions of the root (parentID) with their messages and parts, as
// OpenCode shows its own (opencode's thought as a reasoning part, its read
// call as a read tool part, its streamed answer), the root's task parts
// link them, the event stream shows them live, and no opencode process
// outlives the server.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { createOpencodeClient } from '@opencode-ai/sdk/v2';

import {
  NATIVE_ANSWER, NOTES_FILE, NOTES_TEXT, OPENCODE_ANSWER, RUN_TIMEOUT_MS, TEST_TIMEOUT_MS, THOUGHT, opencodeBinary, opencodeTeam,
} from '../lib/opencode-team.js';
import { serve } from '../lib/serve.js';

const bin = process.env.AGENTPOOL_BIN;
const { skip } = opencodeBinary();

// serveOpencode runs `agentpool serve opencode` on the manifest.
const serveOpencode = (manifest, cwd) => serve(bin, 'opencode', ['--db', ':memory:', '-c', manifest], { cwd });

// events subscribes to /event with the SDK and keeps every event until
// close().
async function events(client) {
  const ac = new AbortController();
  const all = [];
  const sub = await client.event.subscribe({}, { signal: ac.signal, sseMaxRetryAttempts: 1 });
  let connected;
  const ready = new Promise((resolve) => (connected = resolve));
  const reading = (async () => {
    try {
      for await (const e of sub.stream) {
        all.push(e);
        if (e.type === 'server.connected') connected();
      }
    } catch {
      // aborted
    }
  })();
  await ready;
  return { all, close: async () => { ac.abort(); await reading; } };
}

const textOf = (parts) => parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
const sid = (e) => e.properties?.sessionID ?? e.properties?.info?.id;

test('a team of a native agent and the real opencode: both child sessions with their messages', { skip, timeout: TEST_TIMEOUT_MS }, async (t) => {
  assert.ok(bin, 'set AGENTPOOL_BIN to the agentpool binary');
  const team = await opencodeTeam();
  t.after(() => team.close());
  const server = await serveOpencode(team.manifest, team.dir);
  let stopped = false;
  t.after(() => (stopped ? undefined : server.stop()));

  const client = createOpencodeClient({ baseUrl: server.url, directory: team.dir });
  const ev = await events(client);
  let root;
  try {
    const agents = (await client.app.agents()).data;
    assert.ok(agents.some((a) => a.name === 'pair'), `the team is an agent: ${agents.map((a) => a.name)}`);
    root = (await client.session.create({ title: 'pair run' })).data;
    const res = await client.session.prompt(
      { sessionID: root.id, agent: 'pair', parts: [{ type: 'text', text: 'Say hello.' }] },
      { signal: AbortSignal.timeout(RUN_TIMEOUT_MS) },
    );
    assert.equal(res.error, undefined, JSON.stringify(res.error));
    const answer = res.data;
    assert.equal(answer.info.role, 'assistant');
    assert.equal(answer.info.sessionID, root.id);

    // The root's answer: a task part per member, completed, linked to its
    // child session, with the child's answer as output.
    const tasks = answer.parts.filter((p) => p.type === 'tool' && p.tool === 'task');
    const byAgent = new Map(tasks.map((p) => [p.state.input.subagent_type, p]));
    assert.deepEqual([...byAgent.keys()].sort(), ['native', 'opencode']);
    for (const [name, want] of [['opencode', OPENCODE_ANSWER], ['native', NATIVE_ANSWER]]) {
      const p = byAgent.get(name);
      assert.equal(p.state.status, 'completed', `${name}'s task part`);
      assert.equal(p.state.output, want);
      assert.equal(p.state.metadata.parentSessionId, root.id);
      assert.equal(p.state.metadata.stopReason, 'completed');
    }
    const ocID = byAgent.get('opencode').state.metadata.sessionId;
    const nativeID = byAgent.get('native').state.metadata.sessionId;

    // GET /session and /children: both children under the root.
    const all = (await client.session.list()).data;
    for (const [id, name] of [[ocID, 'opencode'], [nativeID, 'native']]) {
      const s = all.find((x) => x.id === id);
      assert.ok(s, `${name}'s session is listed`);
      assert.equal(s.parentID, root.id);
      assert.match(s.title, new RegExp(`\\(@${name} subagent\\)$`));
    }
    const kids = (await client.session.children({ sessionID: root.id })).data;
    assert.deepEqual(kids.map((s) => s.id).sort(), [ocID, nativeID].sort());

    // opencode's session: the prompt, then one assistant message with its
    // thought, its read call (OpenCode's own read tool, with opencode's
    // input) and its answer, finished as OpenCode's are ("stop").
    const ocMsgs = (await client.session.messages({ sessionID: ocID })).data;
    assert.equal(ocMsgs[0].info.role, 'user');
    assert.equal(textOf(ocMsgs[0].parts), 'Say hello.');
    const reply = ocMsgs.at(-1);
    assert.equal(reply.info.role, 'assistant');
    assert.equal(reply.info.agent, 'opencode');
    assert.equal(reply.info.finish, 'stop');
    assert.deepEqual([reply.info.tokens.input, reply.info.tokens.output], [12, 5]);
    assert.deepEqual(reply.parts.map((p) => p.type), ['step-start', 'reasoning', 'tool', 'text', 'step-finish']);
    const [thought, read, said, done] = reply.parts.slice(1);
    assert.equal(thought.text, THOUGHT);
    assert.equal(read.tool, 'read');
    assert.equal(read.state.status, 'completed');
    assert.deepEqual(read.state.input, { filePath: NOTES_FILE });
    assert.match(read.state.title, /\/notes\.md$/, "opencode's own title of the call (the file, from its project's root)");
    assert.equal(read.state.output, NOTES_TEXT.trim());
    assert.equal(said.text, OPENCODE_ANSWER);
    assert.equal(done.reason, 'stop');
    const nativeMsgs = (await client.session.messages({ sessionID: nativeID })).data;
    assert.equal(textOf(nativeMsgs.at(-1).parts), NATIVE_ANSWER);

    // The event stream showed both children live: created under the root,
    // opencode's answer in several deltas, its read part, both idle.
    const seen = ev.all;
    for (const id of [ocID, nativeID]) {
      const created = seen.findIndex((e) => e.type === 'session.created' && sid(e) === id);
      assert.ok(created >= 0, `session.created of ${id}`);
      assert.equal(seen[created].properties.info.parentID, root.id);
      const idle = seen.findIndex((e) => e.type === 'session.idle' && sid(e) === id);
      assert.ok(idle > created, `session.idle of ${id} after its creation`);
    }
    const deltas = seen.filter((e) => e.type === 'message.part.delta' && sid(e) === ocID && e.properties.partID === said.id);
    assert.ok(deltas.length > 1, `opencode's answer streamed: ${deltas.length} deltas`);
    assert.ok(
      seen.some((e) => e.type === 'message.part.updated' && sid(e) === ocID && e.properties.part.tool === 'read' &&
        e.properties.part.state.status === 'completed'),
      'the read part on the bus',
    );
    assert.ok(seen.some((e) => e.type === 'session.idle' && sid(e) === root.id), 'the root went idle');
  } finally {
    await ev.close();
  }

  await server.stop();
  stopped = true;
  assert.deepEqual(team.leftovers(), [], 'no opencode process outlived the server');
});
