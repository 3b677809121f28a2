// Approvals over AG-UI with the real client (@ag-ui/client 1.0.0): a
// nested team (fixtures/approval.yaml: lead -> mid -> writer) whose
// grandchild's Write asks; the client renders the CUSTOM approval_asked
// event, answers over HTTP (POST /approvals/{id}) and sees the answer as
// approval_replied.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';

import { verifyEvents } from '@ag-ui/client';
import { from, lastValueFrom, toArray } from 'rxjs';

import { activityCall, bin, checkStructure, here, parseSSE, recordingAgent, startServer, validate, withWarnings } from './helpers.js';

const fixture = path.join(here, 'fixtures/approval.yaml');
const options = ['allow_once', 'allow_always', 'reject_once', 'reject_always'];

// serve starts the server on the fixture in a workspace of its own.
async function serve(t) {
  assert.ok(existsSync(bin), `AGENTPOOL_BIN ${bin} does not exist (run make build)`);
  const ws = mkdtempSync(path.join(tmpdir(), 'agentpool-agui-approval-'));
  const srv = await startServer(['--db', ':memory:', '-c', fixture, '--workspace', ws]);
  t.after(async () => {
    await srv.stop();
    rmSync(ws, { recursive: true, force: true });
  });
  return { url: srv.url, ws };
}

async function answer(url, id, body, contentType = 'application/json') {
  const res = await fetch(`${url}/approvals/${encodeURIComponent(id)}`, {
    method: 'POST',
    headers: { 'Content-Type': contentType },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

async function pending(url, query = '') {
  const res = await fetch(`${url}/approvals${query}`);
  assert.equal(res.status, 200);
  return (await res.json()).approvals;
}

// runWithAnswer runs the lead with a client that answers each
// approval_asked with reply (after the checks of onAsked) and returns what
// it saw.
async function runWithAnswer(url, reply, onAsked = async () => {}) {
  const { agent, raw } = recordingAgent(`${url}/`);
  const asked = [];
  const replied = [];
  const answers = [];
  agent.addMessage({ id: randomUUID(), role: 'user', content: 'Have hello.md written.' });
  const { value: out, warnings } = await withWarnings(() =>
    agent.runAgent(
      { runId: randomUUID() },
      {
        onCustomEvent: async ({ event }) => {
          if (event.name === 'approval_replied') replied.push(event);
          if (event.name !== 'approval_asked') return;
          asked.push(event);
          await onAsked(event, agent);
          answers.push(await answer(url, event.value.id, reply));
        },
      },
    ),
  );
  assert.deepEqual(warnings, [], 'the client warned about nothing');
  const events = parseSSE(await raw[0]);
  validate(events);
  const subagents = checkStructure(events);
  const verified = await lastValueFrom(from(events).pipe(verifyEvents(false), toArray()));
  assert.equal(verified.length, events.length, 'every event passes verifyEvents');
  const byName = new Map([...subagents.values()].map((s) => [s.name, s.subagentRunId]));
  // The writer's Write is an entry of its activity message.
  const writeCall = activityCall(events, 'Write');
  return { agent, out, events, asked, replied, answers, byName, writeCall };
}

test("a grandchild's Write is announced, approved over HTTP, and runs", async (t) => {
  const { url, ws } = await serve(t);
  const file = path.join(ws, 'hello.md');
  const run = await runWithAnswer(url, { reply: 'allow_once' }, async (event, agent) => {
    assert.ok(!existsSync(file), 'nothing is written before the answer');
    // A client that reconnects finds it on GET /approvals, with its thread.
    const list = await pending(url);
    assert.equal(list.length, 1);
    assert.equal(list[0].threadId, agent.threadId);
    const { threadId, runId, ...entry } = list[0];
    assert.equal(typeof runId, 'string');
    assert.deepEqual(entry, event.value, 'GET /approvals shows what the stream showed');
    assert.deepEqual(await pending(url, '?threadId=another'), []);
    // Bad answers are refused with the field at fault; the request stays.
    let r = await answer(url, event.value.id, { reply: 'yes' });
    assert.equal(r.status, 400);
    assert.equal(r.body.field, 'reply');
    r = await answer(url, event.value.id, { reply: 'allow_once', note: 'x' });
    assert.equal(r.status, 400);
    assert.equal(r.body.field, 'note');
    r = await answer(url, event.value.id, 'reply=allow_once', 'application/x-www-form-urlencoded');
    assert.equal(r.status, 415);
    r = await answer(url, 'per_unknown', { reply: 'allow_once' });
    assert.equal(r.status, 404);
    assert.match(r.body.error, /per_unknown/);
  });

  // The announcement: on the writer (the grandchild), naming its parent,
  // the tool call the client already drew, the input and the four answers.
  assert.equal(run.asked.length, 1);
  const asked = run.asked[0];
  assert.equal(asked.subagentRunId, run.byName.get('writer'));
  assert.equal(asked.value.sessionId, run.byName.get('writer'));
  assert.equal(asked.value.parentSessionId, run.byName.get('mid'));
  assert.equal(asked.value.agent, 'writer');
  assert.equal(asked.value.tool, 'Write');
  assert.equal(asked.value.title, 'Write hello.md');
  assert.equal(asked.value.toolCallId, run.writeCall.toolCallId);
  assert.deepEqual(asked.value.input, { file_path: 'hello.md', content: 'hello from the grandchild\n' });
  assert.deepEqual(asked.value.options, options);
  assert.match(asked.value.reason, /tool_approval policy of agent writer/);

  // The answer is taken once; the stream says how it was settled, before
  // the Write's result.
  assert.deepEqual(run.answers, [{ status: 200, body: { id: asked.value.id, reply: 'allow_once' } }]);
  const late = await answer(url, asked.value.id, { reply: 'reject_once' });
  assert.equal(late.status, 409);
  assert.match(late.body.error, /allow_once by agui/);
  assert.equal(run.replied.length, 1);
  assert.deepEqual(run.replied[0].value, { id: asked.value.id, sessionId: asked.value.sessionId, reply: 'allow_once', by: 'agui' });
  const at = (pred) => run.events.findIndex(pred);
  const askedAt = at((e) => e.type === 'CUSTOM' && e.name === 'approval_asked');
  const repliedAt = at((e) => e.type === 'CUSTOM' && e.name === 'approval_replied');
  const resultAt = run.writeCall.resultAt;
  assert.ok(run.writeCall.addedAt < askedAt, 'the call was drawn before it asked');
  assert.ok(askedAt < repliedAt && repliedAt < resultAt, `asked ${askedAt}, replied ${repliedAt}, result ${resultAt}`);

  assert.equal(readFileSync(file, 'utf8'), 'hello from the grandchild\n');
  assert.match(run.writeCall.result, /^Created /);
  assert.equal(run.out.result, 'Lead done: mid and the writer have finished.');
  assert.deepEqual(await pending(url), [], 'nothing pending after the run');
});

test('a rejection reaches the grandchild, which sees the message', async (t) => {
  const { url, ws } = await serve(t);
  const message = 'Not now: write it to notes.md instead.';
  const run = await runWithAnswer(url, { reply: 'reject_once', message });
  assert.equal(run.asked.length, 1);
  assert.equal(run.answers[0].status, 200);
  assert.deepEqual(run.replied.map((e) => [e.value.reply, e.value.by, e.value.message]), [['reject_once', 'agui', message]]);
  assert.ok(!existsSync(path.join(ws, 'hello.md')), 'the rejected Write did not run');

  // The writer's tool result carries the rejection and the message...
  const why = `rejected by the user in agui: ${message}`;
  assert.ok(run.writeCall.result.includes(why), run.writeCall.result);
  assert.equal(run.writeCall.subagentRunId, run.byName.get('writer'));
  // ...the writer answers with it, and the run goes on to its end.
  const finished = run.events.find((e) => e.type === 'SUBAGENT_FINISHED' && e.subagentRunId === run.byName.get('writer'));
  assert.ok(finished.result.includes(why), finished.result);
  // The client holds it in the writer's activity message, not as a tool
  // message of the main agent.
  assert.ok(!run.out.newMessages.some((m) => m.role === 'tool' && m.toolCallId === run.writeCall.toolCallId));
  const act = run.out.newMessages.find((m) => m.role === 'activity' && m.subagentRunId === run.byName.get('writer'));
  const tool = act.content.toolCalls.find((c) => c.id === run.writeCall.toolCallId);
  assert.ok(tool.status === 'failed' && tool.result.includes(why), 'the client holds the rejection in the activity');
  assert.equal(run.out.result, 'Lead done: mid and the writer have finished.');
});
