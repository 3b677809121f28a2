// Issue 34's "done when" on AG-UI: a manifest's parallel team of a native
// agent and the real `opencode acp` (offline: ../lib/opencode-team.js),
// run with the real client (@ag-ui/client's HttpAgent) through `agentpool
// serve agui`: both members are subagents (SUBAGENT_STARTED/FINISHED)
// whose text, reasoning and tool calls are their activity messages, every
// event passes @ag-ui/core's schemas and the client's verifier, and no
// opencode process outlives the server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';

import { verifyEvents } from '@ag-ui/client';
import { from, lastValueFrom, toArray } from 'rxjs';

import { checkStructure, parseSSE, recordingAgent, startServer, validate, withWarnings } from './helpers.js';
import {
  NATIVE_ANSWER, NOTES_FILE, NOTES_TEXT, OPENCODE_ANSWER, TEST_TIMEOUT_MS, THOUGHT, opencodeBinary, opencodeTeam,
} from '../lib/opencode-team.js';

const { skip } = opencodeBinary();

test('a team of a native agent and the real opencode: both subagents with their content', { skip, timeout: TEST_TIMEOUT_MS }, async (t) => {
  const team = await opencodeTeam();
  t.after(() => team.close());
  const server = await startServer(['--db', ':memory:', '-c', team.manifest]);
  let stopped = false;
  t.after(() => (stopped ? undefined : server.stop()));

  const { agent, raw } = recordingAgent(`${server.url}/agents/pair`);
  agent.addMessage({ id: randomUUID(), role: 'user', content: 'Say hello.' });
  const { value: out, warnings } = await withWarnings(() => agent.runAgent({ runId: randomUUID() }));
  assert.deepEqual(warnings.filter((w) => w.includes('[ag-ui]')), [], 'the client warned about nothing');

  const events = parseSSE(await raw[0]);
  validate(events);
  const subagents = checkStructure(events);
  const verified = await lastValueFrom(from(events).pipe(verifyEvents(false), toArray()));
  assert.equal(verified.length, events.length, 'every event passes verifyEvents');

  // Both members, top-level subagents of the team's run.
  const byName = new Map([...subagents.values()].map((s) => [s.name, s.subagentRunId]));
  assert.deepEqual([...byName.keys()].sort(), ['native', 'opencode']);
  const oc = byName.get('opencode');
  const native = byName.get('native');
  const finished = new Map(events.filter((e) => e.type === 'SUBAGENT_FINISHED').map((e) => [e.subagentRunId, e.result]));
  assert.equal(finished.get(oc), OPENCODE_ANSWER);
  assert.equal(finished.get(native), NATIVE_ANSWER);

  // Their content, each in its activity message (never messages of the
  // run): opencode's thought, its read call and its answer (streamed: the
  // text grew over several patches); the native agent's answer.
  assert.ok(!events.some((e) => e.subagentRunId && /^(TEXT_MESSAGE|TOOL_CALL|REASONING)_/.test(e.type)), 'a member streamed run messages');
  const msgs = out.newMessages;
  const act = (sub) => msgs.find((m) => m.role === 'activity' && m.subagentRunId === sub)?.content;
  // A message's content is a list of text pieces, each patch appending one.
  const said = (sub, role) => act(sub).messages.filter((m) => m.role === role).map((m) => m.content.join('')).join('');
  assert.equal(said(oc, 'assistant'), OPENCODE_ANSWER);
  assert.equal(said(native, 'assistant'), NATIVE_ANSWER);
  assert.equal(said(oc, 'reasoning'), THOUGHT);
  const [read] = act(oc).toolCalls;
  assert.equal(read?.name, 'read', 'opencode read call is in its activity');
  assert.equal(read.status, 'completed');
  assert.equal(read.result, NOTES_TEXT.trim());
  assert.deepEqual(read.metadata.agentpool.input, { filePath: NOTES_FILE }, 'the input opencode named once the call ran');
  assert.deepEqual(read.metadata.agentpool.locations, [{ path: NOTES_FILE }]);

  // The client's own view: the run's result; the members' messages are
  // not the main agent's.
  const finish = events.at(-1);
  assert.equal(finish.type, 'RUN_FINISHED');
  assert.equal(out.result, finish.result);
  assert.ok(finish.result.includes(OPENCODE_ANSWER) && finish.result.includes(NATIVE_ANSWER));
  assert.deepEqual(msgs.filter((m) => m.role !== 'activity' && m.subagentRunId), [], JSON.stringify(msgs));

  await server.stop();
  stopped = true;
  assert.deepEqual(team.leftovers(), [], 'no opencode process outlived the server');
});
