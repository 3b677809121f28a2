// Drives `agentpool serve opencode` with the real OpenCode SDK
// (@opencode-ai/sdk 1.19.3, the v2 client that the OpenCode TUI uses):
// sessions, a blocking prompt through nested delegation with the event
// stream, children and messages, abort of a long run and of one child,
// errors, and the builtin tools shown as OpenCode's own (read, edit, bash,
// todowrite, ...) with the session's todo list.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { createOpencodeClient } from '@opencode-ai/sdk/v2';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../../..');
const bin = process.env.AGENTPOOL_BIN || path.join(repo, 'bin/agentpool');
// Nested delegation: examples/nested.yaml when present, else the spec's
// AgentPool-style example.
const nestedManifest = ['examples/nested.yaml', 'examples/agentpool-style.yaml']
  .map((p) => path.join(repo, p))
  .find((p) => existsSync(p));
const slowManifest = path.join(here, 'fixtures/slow.yaml');
const toolsManifest = path.join(here, 'fixtures/tools.yaml');

const servers = [];
let directory;
let workspace;

// start runs the binary on a free loopback port and resolves its base URL
// from the "opencode listening on" line on stderr.
function start(manifest, ...args) {
  const proc = spawn(bin, ['serve', 'opencode', '--addr', '127.0.0.1:0', '--db', ':memory:', '-c', manifest, ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const server = { proc, stderr: '' };
  servers.push(server);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${server.stderr}`)), 15000);
    proc.stderr.setEncoding('utf8');
    proc.stderr.on('data', (chunk) => {
      server.stderr += chunk;
      const m = server.stderr.match(/opencode listening on (http:\/\/127\.0\.0\.1:\d+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${server.stderr}`));
    });
  });
}

let nestedURL;
let slowURL;
let toolsURL;

before(async () => {
  assert.ok(existsSync(bin), `AGENTPOOL_BIN ${bin} does not exist (run make build)`);
  assert.ok(nestedManifest, 'no example manifest found');
  directory = mkdtempSync(path.join(os.tmpdir(), 'agentpool-opencode-'));
  workspace = mkdtempSync(path.join(os.tmpdir(), 'agentpool-opencode-ws-'));
  [nestedURL, slowURL, toolsURL] = await Promise.all([
    start(nestedManifest),
    start(slowManifest),
    start(toolsManifest, '--workspace', workspace, '--allow', '*'),
  ]);
});

after(async () => {
  await Promise.all(
    servers.map(({ proc }) => {
      if (proc.exitCode !== null) return undefined;
      const exited = new Promise((resolve) => proc.once('exit', resolve));
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
      return exited.then(() => clearTimeout(t));
    }),
  );
  if (directory) rmSync(directory, { recursive: true, force: true });
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

// collect subscribes to the event stream with the SDK and keeps every
// event; wait(pred) resolves with the first event that matches.
async function collect(client) {
  const ac = new AbortController();
  const events = [];
  const waiters = [];
  const sub = await client.event.subscribe({}, { signal: ac.signal, sseMaxRetryAttempts: 1 });
  const reading = (async () => {
    try {
      for await (const e of sub.stream) {
        events.push(e);
        for (const w of [...waiters]) {
          if (w.pred(e)) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve(e);
          }
        }
      }
    } catch {
      // aborted
    }
  })();
  const wait = (pred, ms = 15000, what = 'event') => {
    const found = events.find(pred);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const w = { pred, resolve };
      waiters.push(w);
      setTimeout(() => {
        if (waiters.includes(w)) {
          waiters.splice(waiters.indexOf(w), 1);
          reject(new Error(`no ${what} in ${ms} ms; got ${events.map((e) => e.type).join(', ')}`));
        }
      }, ms).unref();
    });
  };
  await wait((e) => e.type === 'server.connected', 5000, 'server.connected');
  return {
    events,
    wait,
    async close() {
      ac.abort();
      await reading;
    },
  };
}

const textOf = (parts) => parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
const lastText = (msgs) => {
  for (const m of [...msgs].reverse()) {
    if (m.info.role === 'assistant' && textOf(m.parts)) return textOf(m.parts);
  }
  return '';
};
const sid = (e) => e.properties?.sessionID;

test('a prompt through nested delegation shows every child as OpenCode does', async () => {
  const client = createOpencodeClient({ baseUrl: nestedURL, directory });
  const health = await client.global.health();
  assert.equal(health.data.healthy, true);
  const agents = (await client.app.agents()).data;
  assert.ok(agents.some((a) => a.name === 'lead' && a.mode === 'primary'), 'the default agent is primary');

  const ev = await collect(client);
  try {
    const { data: session, error } = await client.session.create({ title: 'nested run' });
    assert.equal(error, undefined);
    assert.match(session.id, /^ses_/);
    assert.equal(session.directory, directory);
    assert.equal(session.title, 'nested run');

    const prompt = 'Write a note about nested teams';
    const res = await client.session.prompt({ sessionID: session.id, parts: [{ type: 'text', text: prompt }] });
    assert.equal(res.error, undefined, JSON.stringify(res.error));
    const answer = res.data;
    assert.equal(answer.info.role, 'assistant');
    assert.equal(answer.info.sessionID, session.id);
    assert.match(textOf(answer.parts), /^Done:/);
    await ev.wait((e) => e.type === 'session.idle' && sid(e) === session.id, 15000, 'root session.idle');

    const events = ev.events;
    const ids = events.map((e) => e.id);
    assert.deepEqual([...ids].sort(), ids, 'event ids ascend');
    assert.ok(events.every((e) => typeof e.id === 'string' && e.id.startsWith('evt_')));

    // Every child: session.created with parentID before its content, the
    // spawning tool part running with metadata.sessionId, session.idle,
    // then the tool part completed with the child's output.
    const created = new Map();
    events.forEach((e, i) => {
      if (e.type === 'session.created' && e.properties.info.parentID) {
        assert.ok(!created.has(sid(e)), 'one session.created per child');
        assert.match(e.properties.info.title, / \(@[\w-]+ subagent\)$/);
        created.set(sid(e), { index: i, parent: e.properties.info.parentID });
      }
    });
    assert.equal(created.size, 7, 'the nested example spawns 7 child sessions');
    const byParent = new Map();
    for (const [child, { index, parent }] of created) {
      if (!byParent.has(parent)) byParent.set(parent, []);
      byParent.get(parent).push(child);
      const first = events.findIndex((e) => sid(e) === child && e.type !== 'session.created');
      assert.ok(first > index, `child ${child}: content after session.created`);
      const idle = events.findIndex((e) => e.type === 'session.idle' && sid(e) === child);
      assert.ok(idle > index, `child ${child}: session.idle`);
      assert.ok(!events.slice(idle + 1).some((e) => sid(e) === child), `child ${child}: nothing after session.idle`);
      const linked = (status) =>
        events.findIndex(
          (e) =>
            e.type === 'message.part.updated' &&
            sid(e) === parent &&
            e.properties.part.type === 'tool' &&
            e.properties.part.state.status === status &&
            e.properties.part.state.metadata?.sessionId === child,
        );
      const running = linked('running');
      assert.ok(running >= 0 && running < idle, `child ${child}: tool part running with metadata.sessionId before the child's idle`);
      assert.equal(events[running].properties.part.state.metadata.parentSessionId, parent);
      const completedAt = events.findLastIndex(
        (e) =>
          e.type === 'message.part.updated' &&
          sid(e) === parent &&
          e.properties.part.state?.metadata?.sessionId === child &&
          e.properties.part.state.status === 'completed',
      );
      assert.ok(completedAt > idle, `child ${child}: tool part completed after the child's idle`);
      const output = events[completedAt].properties.part.state.output;

      const msgs = (await client.session.messages({ sessionID: child })).data;
      assert.ok(msgs.length >= 2, `child ${child} has messages`);
      assert.equal(msgs[0].info.role, 'user');
      assert.ok(textOf(msgs[0].parts).length > 0, 'the child prompt is its first message');
      const want = lastText(msgs);
      if (want) assert.ok(output.includes(want), `child ${child}: output ${JSON.stringify(output)} carries ${JSON.stringify(want)}`);
      else assert.ok(output.length > 0);
    }

    // children lists each child with its parentID.
    for (const [parent, kids] of byParent) {
      const listed = (await client.session.children({ sessionID: parent })).data;
      assert.deepEqual(listed.map((s) => s.id).sort(), [...kids].sort());
      assert.ok(listed.every((s) => s.parentID === parent && s.directory === directory));
    }

    // The root's messages: the prompt, then the task part linked to the
    // team child, then the final answer.
    const msgs = (await client.session.messages({ sessionID: session.id })).data;
    assert.equal(msgs[0].info.role, 'user');
    assert.equal(textOf(msgs[0].parts), prompt);
    const task = msgs.flatMap((m) => m.parts).find((p) => p.type === 'tool' && p.tool === 'task');
    assert.ok(task, 'a task part');
    assert.equal(task.state.status, 'completed');
    assert.equal(created.get(task.state.metadata.sessionId)?.parent, session.id);
    assert.equal(task.state.input.subagent_type, 'squad');
    assert.equal(msgs.at(-1).info.id, answer.info.id);
    assert.ok(msgs.slice(1).every((m) => m.info.parentID === msgs[0].info.id));

    assert.deepEqual((await client.session.status()).data, {});
    const roots = (await client.session.list({ roots: true })).data;
    assert.ok(roots.some((s) => s.id === session.id && s.title === 'nested run'));
  } finally {
    await ev.close();
  }
});

test('abort ends a long run: children end aborted, the session goes idle', async () => {
  const client = createOpencodeClient({ baseUrl: slowURL, directory });
  const ev = await collect(client);
  try {
    const { data: session } = await client.session.create({});
    const accepted = await client.session.promptAsync({ sessionID: session.id, parts: [{ type: 'text', text: 'start' }] });
    assert.equal(accepted.response.status, 204);
    const childCreated = await ev.wait(
      (e) => e.type === 'session.created' && e.properties.info.parentID === session.id,
      15000,
      'child session.created',
    );
    const child = sid(childCreated);
    await ev.wait((e) => e.type === 'message.part.delta' && sid(e) === child, 15000, 'child delta');
    const busy = (await client.session.status()).data;
    assert.deepEqual(busy[session.id], { type: 'busy' });
    assert.deepEqual(busy[child], { type: 'busy' });

    const aborted = await client.session.abort({ sessionID: session.id });
    assert.equal(aborted.data, true);
    assert.deepEqual((await client.session.status()).data, {}, 'no session is busy after abort');
    await ev.wait((e) => e.type === 'session.idle' && sid(e) === session.id, 5000, 'root session.idle');

    const events = ev.events;
    const childIdle = events.findIndex((e) => e.type === 'session.idle' && sid(e) === child);
    const partError = events.findIndex(
      (e) =>
        e.type === 'message.part.updated' &&
        sid(e) === session.id &&
        e.properties.part.state?.metadata?.sessionId === child &&
        e.properties.part.state.status === 'error',
    );
    const rootIdle = events.findIndex((e) => e.type === 'session.idle' && sid(e) === session.id);
    assert.ok(childIdle >= 0 && childIdle < partError && partError < rootIdle, `order: child idle ${childIdle}, part error ${partError}, root idle ${rootIdle}`);
    const rootError = events.find((e) => e.type === 'session.error' && sid(e) === session.id);
    assert.equal(rootError?.properties.error.name, 'MessageAbortedError');

    const childMsgs = (await client.session.messages({ sessionID: child })).data;
    const last = childMsgs.filter((m) => m.info.role === 'assistant').at(-1);
    assert.equal(last.info.error?.name, 'MessageAbortedError', 'the child ended aborted');
    assert.ok(last.info.time.completed > 0);
    const parts = [...childMsgs, ...(await client.session.messages({ sessionID: session.id })).data].flatMap((m) => m.parts);
    assert.ok(!parts.some((p) => p.type === 'tool' && ['pending', 'running'].includes(p.state.status)), 'no tool part left running');
  } finally {
    await ev.close();
  }
});

test('abort of a child session cancels that child alone; the root answers', async () => {
  const client = createOpencodeClient({ baseUrl: slowURL, directory });
  const ev = await collect(client);
  try {
    const { data: session } = await client.session.create({});
    await client.session.promptAsync({ sessionID: session.id, parts: [{ type: 'text', text: 'start' }] });
    const childCreated = await ev.wait(
      (e) => e.type === 'session.created' && e.properties.info.parentID === session.id,
      15000,
      'child session.created',
    );
    const child = sid(childCreated);
    await ev.wait((e) => e.type === 'message.part.delta' && sid(e) === child, 15000, 'child delta');

    const aborted = await client.session.abort({ sessionID: child });
    assert.equal(aborted.data, true);
    // The root goes on to its answer: idle, no error, "Done." last.
    await ev.wait((e) => e.type === 'session.idle' && sid(e) === session.id, 15000, 'root session.idle');
    assert.equal(ev.events.find((e) => e.type === 'session.error' && sid(e) === session.id), undefined, 'the root has no error');
    const part = ev.events.findLast(
      (e) => e.type === 'message.part.updated' && sid(e) === session.id && e.properties.part.state?.metadata?.sessionId === child,
    ).properties.part;
    assert.equal(part.state.status, 'error');
    assert.match(part.state.error, /cancelled by the user \(from opencode\)/);
    const childMsgs = (await client.session.messages({ sessionID: child })).data;
    assert.equal(childMsgs.filter((m) => m.info.role === 'assistant').at(-1).info.error?.name, 'MessageAbortedError');
    assert.equal(lastText((await client.session.messages({ sessionID: session.id })).data), 'Done.');
  } finally {
    await ev.close();
  }
});

test('unknown ids answer NotFoundError; bad input BadRequest; the server keeps serving', async () => {
  const client = createOpencodeClient({ baseUrl: nestedURL, directory });
  const missing = 'ses_00000000000000doesnotexist';
  const got = await client.session.get({ sessionID: missing });
  assert.equal(got.response.status, 404);
  assert.deepEqual(got.error, { name: 'NotFoundError', data: { message: `Session not found: ${missing}` } });
  for (const call of [
    () => client.session.messages({ sessionID: missing }),
    () => client.session.children({ sessionID: missing }),
    () => client.session.prompt({ sessionID: missing, parts: [{ type: 'text', text: 'hi' }] }),
    () => client.session.abort({ sessionID: missing }),
    () => client.session.delete({ sessionID: missing }),
  ]) {
    const r = await call();
    assert.equal(r.response.status, 404);
    assert.equal(r.error.name, 'NotFoundError');
  }
  await assert.rejects(client.session.get({ sessionID: missing }, { throwOnError: true }), {
    message: `Session not found: ${missing}`,
  });

  const { data: session } = await client.session.create({});
  const bad = await client.session.prompt({ sessionID: session.id, parts: [{ type: 'text', text: 'x' }], agent: 'nobody' });
  assert.equal(bad.response.status, 400);
  assert.equal(bad.error.name, 'BadRequest');
  assert.match(bad.error.data.message, /unknown agent/);

  const raw = await fetch(`${nestedURL}/session/${session.id}/message`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"parts": [',
  });
  assert.equal(raw.status, 400);
  assert.equal((await raw.json()).name, 'BadRequest');

  assert.equal((await client.global.health()).data.healthy, true);
  const doc = await (await fetch(`${nestedURL}/doc`)).json();
  assert.equal(doc.openapi, '3.1.0');
  assert.ok(doc.paths['/session/{sessionID}/message'].post);
});

test('builtin tools show as OpenCode tools; the todo list is served and published', async () => {
  const client = createOpencodeClient({ baseUrl: toolsURL, directory });
  const ev = await collect(client);
  try {
    const { data: session } = await client.session.create({ title: 'tools' });
    const empty = await client.session.todo({ sessionID: session.id });
    assert.equal(empty.error, undefined);
    assert.deepEqual(empty.data, [], 'a new session has no todos');

    const res = await client.session.prompt({ sessionID: session.id, parts: [{ type: 'text', text: 'Tidy the notes' }] });
    assert.equal(res.error, undefined, JSON.stringify(res.error));
    assert.equal(textOf(res.data.parts), 'The notes are tidy.');
    await ev.wait((e) => e.type === 'session.idle' && sid(e) === session.id, 15000, 'session.idle');
    assert.equal(readFileSync(path.join(workspace, 'notes/today.md'), 'utf8'), '# Today\n\n- ship the tools\n- fix the typo\n');

    // The history: OpenCode's tool names, input fields, titles, metadata.
    const msgs = (await client.session.messages({ sessionID: session.id })).data;
    const tools = msgs.flatMap((m) => m.parts).filter((p) => p.type === 'tool');
    assert.deepEqual(
      tools.map((p) => p.tool),
      ['todowrite', 'write', 'read', 'grep', 'edit', 'bash', 'todowrite'],
    );
    assert.ok(tools.every((p) => p.state.status === 'completed'), 'every call completed');
    const part = (name) => tools.find((p) => p.tool === name);
    const read = part('read');
    assert.deepEqual(read.state.input, { filePath: 'notes/today.md' });
    assert.equal(read.state.title, 'notes/today.md');
    assert.match(read.state.output, /\t- fix the tpyo/);
    assert.equal(read.state.metadata.preview, '# Today\n\n- ship the tools\n- fix the tpyo');
    assert.deepEqual(part('write').state.input, { filePath: 'notes/today.md', content: '# Today\n\n- ship the tools\n- fix the tpyo\n' });
    assert.deepEqual(part('grep').state.input, { pattern: 'tpyo', include: '*.md', output_mode: 'content' });
    assert.equal(part('grep').state.title, 'tpyo');
    const edit = part('edit');
    assert.deepEqual(edit.state.input, { filePath: 'notes/today.md', oldString: 'tpyo', newString: 'typo' });
    assert.equal(edit.state.title, 'notes/today.md');
    assert.match(edit.state.metadata.diff, /^Index: .*notes\/today\.md\n/);
    assert.match(edit.state.metadata.diff, /\n@@ -1,4 \+1,4 @@\n # Today\n \n - ship the tools\n-- fix the tpyo\n\+- fix the typo\n$/);
    assert.equal(edit.state.metadata.filediff.additions, 1);
    assert.equal(edit.state.metadata.filediff.deletions, 1);
    const bash = part('bash');
    assert.deepEqual(bash.state.input, { command: 'grep -c typo notes/today.md', description: 'Count the typos' });
    assert.equal(bash.state.title, 'Count the typos');
    assert.equal(bash.state.metadata.exit, 0);
    assert.equal(bash.state.metadata.output, '1');
    const todo = part('todowrite');
    assert.equal(todo.state.title, '2 todos');
    assert.deepEqual(todo.state.input.todos.map(({ content, status, priority }) => ({ content, status, priority })), [
      { content: 'Write the notes', status: 'in_progress', priority: 'medium' },
      { content: 'Fix the typo', status: 'pending', priority: 'medium' },
    ]);
    assert.equal(todo.state.metadata.todos.length, 2);
    for (const p of tools) {
      for (const key of ['file_path', 'old_string', 'new_string', 'replace_all', 'glob']) {
        assert.ok(!(key in p.state.input), `${p.tool}: no ${key} in the input`);
      }
    }

    // The bus showed the same parts, and todo.updated for each TodoWrite.
    const last = new Map();
    for (const e of ev.events) {
      if (e.type === 'message.part.updated' && e.properties.part.type === 'tool') last.set(e.properties.part.id, e.properties.part);
    }
    for (const p of tools) {
      const live = last.get(p.id);
      assert.ok(live, `the bus showed ${p.tool} ${p.id}`);
      assert.equal(live.tool, p.tool);
      assert.deepEqual(live.state.input, p.state.input);
      assert.deepEqual(live.state.metadata, p.state.metadata);
      assert.equal(live.state.title, p.state.title);
    }
    const done = [
      { content: 'Write the notes', status: 'completed', priority: 'medium' },
      { content: 'Fix the typo', status: 'completed', priority: 'medium' },
    ];
    const updates = ev.events.filter((e) => e.type === 'todo.updated' && sid(e) === session.id);
    assert.equal(updates.length, 2);
    assert.deepEqual(updates[0].properties.todos.map((t) => t.status), ['in_progress', 'pending']);
    assert.deepEqual(updates[1].properties.todos, done);

    // session.todo: the latest list.
    const todos = await client.session.todo({ sessionID: session.id });
    assert.equal(todos.error, undefined);
    assert.deepEqual(todos.data, done);
    const missing = await client.session.todo({ sessionID: 'ses_00000000000000doesnotexist' });
    assert.equal(missing.response.status, 404);
    assert.equal(missing.error.name, 'NotFoundError');
  } finally {
    await ev.close();
  }
});
