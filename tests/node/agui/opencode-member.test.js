// Issue 34's "done when" on AG-UI: a manifest's parallel team of a native
// agent and the real `opencode acp` (offline: ../lib/opencode-team.js),
// run with the real client (@ag-ui/client's HttpAgent) through `agentpool
// serve agui`: both members are subagents (SUBAGENT_STARTED/FINISHED)
// whose text, reasoning and tool calls carry their subagentRunId, every
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

  // Their content, attributed: opencode's thought, its read call and its
  // streamed answer; the native agent's answer.
  const of = (sub, type) => events.filter((e) => e.subagentRunId === sub && e.type === type);
  const text = (sub) => of(sub, 'TEXT_MESSAGE_CONTENT').map((e) => e.delta).join('');
  assert.equal(text(oc), OPENCODE_ANSWER);
  assert.ok(of(oc, 'TEXT_MESSAGE_CONTENT').length > 1, "opencode's answer streamed in several chunks");
  assert.equal(text(native), NATIVE_ANSWER);
  assert.equal(of(oc, 'REASONING_MESSAGE_CONTENT').map((e) => e.delta).join(''), THOUGHT);
  const [start] = of(oc, 'TOOL_CALL_START');
  assert.equal(start?.toolCallName, 'read', 'opencode read call is announced');
  assert.ok(of(oc, 'TOOL_CALL_END').some((e) => e.toolCallId === start.toolCallId));
  const [result] = of(oc, 'TOOL_CALL_RESULT');
  assert.equal(result.toolCallId, start.toolCallId);
  assert.equal(result.content, NOTES_TEXT.trim());
  assert.deepEqual(result.metadata.agentpool.input, { filePath: NOTES_FILE }, 'the input opencode named once the call ran');
  assert.deepEqual(result.metadata.agentpool.locations, [{ path: NOTES_FILE }]);
  assert.ok(events.findIndex((e) => e === start) < events.findIndex((e) => e === result));

  // The client's own view: the run's result and the attributed messages.
  const finish = events.at(-1);
  assert.equal(finish.type, 'RUN_FINISHED');
  assert.equal(out.result, finish.result);
  assert.ok(finish.result.includes(OPENCODE_ANSWER) && finish.result.includes(NATIVE_ANSWER));
  const msgs = out.newMessages;
  assert.ok(msgs.some((m) => m.subagentRunId === oc && m.role === 'assistant' && m.content === OPENCODE_ANSWER), JSON.stringify(msgs));
  assert.ok(msgs.some((m) => m.subagentRunId === native && m.role === 'assistant' && m.content === NATIVE_ANSWER));
  assert.ok(msgs.some((m) => m.role === 'tool' && m.toolCallId === start.toolCallId && m.content === NOTES_TEXT.trim()));

  await server.stop();
  stopped = true;
  assert.deepEqual(team.leftovers(), [], 'no opencode process outlived the server');
});
