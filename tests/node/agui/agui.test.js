// Drives `agentpool serve agui` with the real AG-UI client (@ag-ui/client
// 1.0.0) and validates every event on the wire with @ag-ui/core's schemas.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';

import { HttpAgent, verifyEvents } from '@ag-ui/client';
import { from, lastValueFrom, toArray } from 'rxjs';

import {
  activityAppends, bin, checkStructure, here, parseSSE, recordingAgent, repo, startServer, validate, withWarnings,
} from './helpers.js';
// A manifest with nested delegation: examples/nested.yaml when present,
// else the spec's AgentPool-style example (planner -> team -> worker).
const manifest = ['examples/nested.yaml', 'examples/agentpool-style.yaml']
  .map((p) => path.join(repo, p))
  .find((p) => existsSync(p));

let server;
let baseURL;

before(async () => {
  assert.ok(existsSync(bin), `AGENTPOOL_BIN ${bin} does not exist (run make build)`);
  assert.ok(manifest, 'no example manifest found');
  server = await startServer(['--db', ':memory:', '-c', manifest]);
  baseURL = server.url;
});

after(async () => {
  await server?.stop();
});

test('runAgent on the default agent: valid events, nested subagents, final answer', async () => {
  const { agent, raw } = recordingAgent(`${baseURL}/`);
  const seen = [];
  agent.addMessage({ id: randomUUID(), role: 'user', content: 'Research the Go scheduler.' });
  const { value: out, warnings } = await withWarnings(() =>
    agent.runAgent({ runId: randomUUID() }, { onEvent: ({ event }) => void seen.push(event) }),
  );
  assert.deepEqual(warnings.filter((w) => w.includes('[ag-ui]')), [], 'the client warned about nothing');

  const events = parseSSE(await raw[0]);
  validate(events);
  const subagents = checkStructure(events);
  assert.equal(seen.length, events.length, 'the client applied every event');

  // Sub-agent events nest: some subagent has a subagent parent, and every
  // parent link points at a subagent started before it.
  const nested = [...subagents.values()].filter((s) => s.parentSubagentRunId);
  assert.ok(nested.length > 0, 'a nested subagent carries parentSubagentRunId');
  assert.ok([...subagents.values()].some((s) => !s.parentSubagentRunId && s.parentToolCallId),
    'a top-level subagent names the tool call that spawned it');
  // A child's content is its activity message, never a text message or
  // tool call of the run.
  assert.ok(!events.some((e) => e.subagentRunId && /^(TEXT_MESSAGE|TOOL_CALL|REASONING)_/.test(e.type)), 'a child streamed run messages');
  assert.ok(events.some((e) => e.subagentRunId && e.type === 'ACTIVITY_DELTA'), 'child content is in its activity');

  const finished = events.at(-1);
  assert.equal(typeof finished.result, 'string');
  assert.ok(finished.result.length > 0);
  assert.equal(out.result, finished.result);
  const answer = out.newMessages.find((m) => m.role === 'assistant' && !m.subagentRunId && m.content === finished.result);
  assert.ok(answer, `newMessages holds the final answer: ${JSON.stringify(out.newMessages)}`);
  // The main agent's messages are the root's alone: each subagent run is
  // one activity message (role "activity", its subagentRunId), with its
  // text and tool calls inside.
  const conversation = out.newMessages.filter((m) => m.role !== 'activity');
  assert.deepEqual(conversation.filter((m) => m.subagentRunId), [], 'a child message among the main agent\'s');
  const acts = out.newMessages.filter((m) => m.role === 'activity');
  assert.deepEqual(acts.map((m) => m.subagentRunId).sort(), [...subagents.keys()].sort(), 'one activity per subagent run');
  for (const a of acts) {
    assert.equal(a.activityType, 'subagent');
    assert.equal(a.content.name, subagents.get(a.subagentRunId).name);
    assert.equal(a.content.status, 'completed');
    // A team's activity has no messages of its own (its members have
    // theirs); each has its answer.
    assert.equal(typeof a.content.result, 'string', `activity of ${a.content.name} has no result`);
  }
  assert.ok(acts.some((a) => a.content.messages.some((m) => m.role === 'assistant' && m.content.join(''))), 'child text in an activity');
  // A message's content is a list of text pieces that the patches append
  // to: the client's list is the stream's appends, in order.
  const appended = activityAppends(events);
  for (const a of acts) {
    for (const [i, m] of a.content.messages.entries()) {
      assert.ok(Array.isArray(m.content) && m.content.every((p) => typeof p === 'string'), `content of ${a.content.name} #${i}: ${JSON.stringify(m.content)}`);
      assert.deepEqual(m.content, appended.get(`${a.id} /messages/${i}/content`) ?? [], `content of ${a.content.name} #${i}`);
    }
  }
  assert.ok(out.newMessages.some((m) => m.role === 'tool'), 'tool results are in newMessages');
  assert.equal(agent.messages.filter((m) => m.role !== 'activity').at(-1).content, finished.result);

  // A second run on the same thread continues it.
  agent.addMessage({ id: randomUUID(), role: 'user', content: 'And once more, briefly.' });
  const second = await agent.runAgent({ runId: randomUUID() });
  const events2 = parseSSE(await raw[1]);
  validate(events2);
  checkStructure(events2);
  assert.equal(events2[0].threadId, agent.threadId);
  assert.equal(second.result, events2.at(-1).result);
});

test('runAgent on a named agent', async () => {
  const list = await (await fetch(`${baseURL}/agents`)).json();
  assert.ok(Array.isArray(list.agents) && list.agents.length > 0);
  for (const a of list.agents) {
    assert.equal(typeof a.name, 'string');
    assert.ok(['agent', 'team_parallel', 'team_sequential'].includes(a.type), a.type);
  }
  const leaf = list.agents.find((a) => a.type === 'agent' && !a.default) ?? list.agents[0];
  const { agent, raw } = recordingAgent(`${baseURL}/agents/${encodeURIComponent(leaf.name)}`);
  agent.addMessage({ id: randomUUID(), role: 'user', content: [{ type: 'text', text: 'Say something.' }] });
  const out = await agent.runAgent({ runId: randomUUID() });
  const events = parseSSE(await raw[0]);
  validate(events);
  checkStructure(events);
  assert.ok(out.newMessages.some((m) => m.role === 'assistant' && m.content === out.result));
});

async function post(url, body, contentType = 'application/json') {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': contentType, Accept: 'text/event-stream' },
    body,
  });
  const text = await res.text();
  return { status: res.status, type: res.headers.get('content-type'), text };
}

const goodBody = (extra = {}) =>
  JSON.stringify({
    threadId: randomUUID(),
    runId: randomUUID(),
    messages: [{ id: 'm1', role: 'user', content: 'hi' }],
    ...extra,
  });

test('bad requests get 4xx with a JSON error, and the server keeps serving', async () => {
  const cases = [
    ['malformed JSON', () => post(`${baseURL}/`, '{"threadId": "t", '), 400],
    ['not an object', () => post(`${baseURL}/`, '[1,2,3]'), 400],
    ['wrong content type', () => post(`${baseURL}/`, goodBody(), 'text/plain'), 415],
    ['unknown agent', () => post(`${baseURL}/agents/no_such_agent`, goodBody()), 404],
    ['missing messages', () => post(`${baseURL}/`, JSON.stringify({ threadId: 't', runId: 'r' })), 400],
    ['missing threadId', () => post(`${baseURL}/`, JSON.stringify({ runId: 'r', messages: [] })), 400],
    ['wrong type', () => post(`${baseURL}/`, JSON.stringify({ threadId: 5, runId: 'r', messages: [] })), 400],
    ['no user message', () => post(`${baseURL}/`, goodBody({ messages: [] })), 400],
    ['too large', () => post(`${baseURL}/`, goodBody({ forwardedProps: { pad: 'x'.repeat(9 << 20) } })), 413],
  ];
  for (const [name, run, want] of cases) {
    const r = await run();
    assert.equal(r.status, want, `${name}: status (${r.text})`);
    assert.match(r.type ?? '', /^application\/json/, `${name}: JSON error body`);
    const body = JSON.parse(r.text);
    assert.equal(typeof body.error, 'string', `${name}: {"error": ...}`);
    assert.ok(body.error.length > 0);
  }
  const health = await fetch(`${baseURL}/healthz`);
  assert.equal(health.status, 200);
  const ok = await post(`${baseURL}/`, goodBody());
  assert.equal(ok.status, 200);
  assert.match(ok.type, /^text\/event-stream/);
  const events = parseSSE(ok.text);
  validate(events);
  checkStructure(events);
});

test('the client surfaces an HTTP error for an unknown agent', async () => {
  const agent = new HttpAgent({ url: `${baseURL}/agents/nope` });
  agent.addMessage({ id: randomUUID(), role: 'user', content: 'hi' });
  const orig = console.error;
  console.error = () => {};
  try {
    await assert.rejects(() => agent.runAgent(), /HTTP 404/);
  } finally {
    console.error = orig;
  }
});

// The Go golden files (server/agui/testdata) pin the encoder; here the real
// schemas and the client's own verifier check them.
test('the Go golden SSE files pass the schemas and the client verifier', async () => {
  const dir = path.join(repo, 'server/agui/testdata');
  const files = readdirSync(dir).filter((f) => f.endsWith('.sse'));
  assert.ok(files.length >= 2, 'golden files present');
  for (const f of files) {
    const events = parseSSE(readFileSync(path.join(dir, f), 'utf8'));
    validate(events);
    const out = await lastValueFrom(from(events).pipe(verifyEvents(false), toArray()));
    assert.equal(out.length, events.length, `${f}: every event passes verifyEvents`);
  }
});

// The builtin tools (fixtures/tools.yaml): the editor's todo list is the
// AG-UI state, and file tool calls carry their text results.
const toolsFixture = path.join(here, 'fixtures/tools.yaml');
const todos = (s1, s2, s3) => [
  { content: 'Write the notes', status: s1, priority: 'medium', activeForm: 'Writing the notes' },
  { content: 'Fix the typo', status: s2, priority: 'medium', activeForm: 'Fixing the typo' },
  { content: 'Have the notes checked', status: s3, priority: 'medium', activeForm: 'Having the notes checked' },
];

test('builtin tools: todos as state (snapshot, deltas, kept across runs), tool results', async (t) => {
  const ws = mkdtempSync(path.join(tmpdir(), 'agentpool-agui-ws-'));
  const srv = await startServer(['--db', ':memory:', '-c', toolsFixture, '--workspace', ws]);
  t.after(async () => {
    await srv.stop();
    rmSync(ws, { recursive: true, force: true });
  });

  const { agent, raw } = recordingAgent(`${srv.url}/`);
  agent.addMessage({ id: randomUUID(), role: 'user', content: 'Tidy the notes.' });
  const { value: out, warnings } = await withWarnings(() => agent.runAgent({ runId: randomUUID() }));
  // The client warns (and keeps its old state) when a patch does not apply.
  assert.deepEqual(warnings, [], 'the client warned about nothing');

  const events = parseSSE(await raw[0]);
  validate(events);
  checkStructure(events);
  const verified = await lastValueFrom(from(events).pipe(verifyEvents(false), toArray()));
  assert.equal(verified.length, events.length, 'every event passes verifyEvents');

  // State: a snapshot the first time, then deltas; the client applied them.
  const states = events.filter((e) => e.type === 'STATE_SNAPSHOT' || e.type === 'STATE_DELTA');
  assert.deepEqual(states.map((e) => e.type), ['STATE_SNAPSHOT', 'STATE_DELTA', 'STATE_DELTA']);
  assert.deepEqual(states[0].snapshot, { todos: todos('in_progress', 'pending', 'pending') });
  assert.ok(states.every((e) => !('subagentRunId' in e)), 'the root owns the state');
  assert.deepEqual(agent.state, { todos: todos('completed', 'completed', 'completed') });

  // Tool calls: the builtin tools by name, each with its text result.
  const names = new Map(events.filter((e) => e.type === 'TOOL_CALL_START').map((e) => [e.toolCallId, e.toolCallName]));
  const results = new Map();
  for (const e of events.filter((e) => e.type === 'TOOL_CALL_RESULT')) {
    const name = names.get(e.toolCallId);
    results.set(name, [...(results.get(name) ?? []), e]);
  }
  for (const name of ['TodoWrite', 'Write', 'Read', 'Edit']) {
    assert.ok(results.has(name), `${name} was called and has a result`);
    for (const r of results.get(name)) {
      assert.equal(typeof r.content, 'string');
      assert.ok(r.content.length > 0 && !r.content.startsWith('{'), `${name}: the result is the tool's text: ${r.content}`);
    }
  }
  const file = path.join(ws, 'notes/today.md');
  assert.equal(readFileSync(file, 'utf8'), '# Today\n\n- ship the tools\n- fix the typo\n');
  assert.match(results.get('Read')[0].content, /- ship the tools/);
  assert.match(results.get('Write')[0].content, /^Created /);
  assert.ok(!results.has('Grep'), "the worker's tool call is no message of the run");
  const grep = out.newMessages
    .filter((m) => m.role === 'activity' && m.subagentRunId)
    .flatMap((m) => m.content.toolCalls)
    .find((c) => c.name === 'Grep');
  assert.ok(grep && grep.status === 'completed' && grep.result, "the worker's Grep is in its activity, with its result");
  // Front-end fields of the call ride in metadata.agentpool.
  const write = results.get('Write')[0].metadata.agentpool;
  assert.equal(write.diffs[0].new_text, '# Today\n\n- ship the tools\n- fix the tpyo\n');
  assert.ok(write.locations[0].path.endsWith('notes/today.md'));
  const tool = out.newMessages.find((m) => m.role === 'tool' && m.toolCallId === results.get('Read')[0].toolCallId);
  assert.ok(tool && tool.content === results.get('Read')[0].content, 'the tool message holds the text');

  // The next run on the thread starts with the current state, merged into
  // the client's own (which it sends back as RunAgentInput.state).
  agent.setState({ ...agent.state, theme: 'dark' });
  agent.addMessage({ id: randomUUID(), role: 'user', content: 'Once more.' });
  const seen = [];
  const second = await withWarnings(() =>
    agent.runAgent({ runId: randomUUID() }, { onStateChanged: ({ state }) => void seen.push(structuredClone(state)) }),
  );
  assert.deepEqual(second.warnings, []);
  // The snapshot, then each list of the run as the client patched it.
  assert.deepEqual(seen.map((s) => s.todos.map((x) => x.status).join(' ')), [
    'completed completed completed',
    'in_progress pending pending',
    'completed in_progress pending',
    'completed completed completed',
  ]);
  assert.ok(seen.every((s) => s.theme === 'dark'), "the client's own member is kept");
  const events2 = parseSSE(await raw[1]);
  validate(events2);
  checkStructure(events2);
  assert.deepEqual(events2.slice(0, 2).map((e) => e.type), ['RUN_STARTED', 'STATE_SNAPSHOT']);
  assert.deepEqual(events2[1].snapshot, { theme: 'dark', todos: todos('completed', 'completed', 'completed') });
  assert.ok(events2.slice(2).every((e) => e.type !== 'STATE_SNAPSHOT'), 'later changes are deltas');
  assert.deepEqual(agent.state, { theme: 'dark', todos: todos('completed', 'completed', 'completed') });
});
