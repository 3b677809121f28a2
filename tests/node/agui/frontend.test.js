// Front-end tools (RunAgentInput.tools), context and resume with the real
// AG-UI client (@ag-ui/client 1.0.0) against `agentpool serve agui`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';

import { HttpAgent } from '@ag-ui/client';

import {
  bin, checkStructure, here, parseSSE, recordingAgent, startServer, validate, withWarnings,
} from './helpers.js';

let server;
let baseURL;

before(async () => {
  assert.ok(existsSync(bin), `AGENTPOOL_BIN ${bin} does not exist (run make build)`);
  server = await startServer(['--db', ':memory:', '-c', path.join(here, 'fixtures/frontend.yaml')]);
  baseURL = server.url;
});

after(async () => {
  await server?.stop();
});

const weather = {
  name: 'getWeather',
  description: 'The weather in a city, looked up by the browser.',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

test('a front-end tool: the client sees the call, runs it, and the next run answers with its result', async () => {
  const { agent, raw } = recordingAgent(`${baseURL}/`);
  agent.addMessage({ id: randomUUID(), role: 'user', content: 'What is the weather?' });
  let pending;
  const { value: first, warnings } = await withWarnings(() => agent.runAgent({ runId: randomUUID(), tools: [weather] }, {
    onRunFinishedEvent: (p) => { pending = p.pendingToolCallIds; },
  }));
  assert.deepEqual(warnings.filter((w) => w.includes('[ag-ui]')), [], 'the client warned about nothing');
  let events = parseSSE(await raw[0]);
  validate(events);
  checkStructure(events);
  assert.equal(events.at(-1).type, 'RUN_FINISHED');
  assert.equal(events.at(-1).result, undefined, 'no result: the client runs the tool');
  assert.ok(!events.some((e) => e.type === 'TOOL_CALL_RESULT'), 'the server did not answer the call');
  const call = first.newMessages.find((m) => m.role === 'assistant' && m.toolCalls?.length)?.toolCalls[0];
  assert.ok(call, `newMessages hold the call: ${JSON.stringify(first.newMessages)}`);
  assert.equal(call.function.name, 'getWeather');
  assert.deepEqual(pending, [call.id], 'the client reads the call as pending');
  const args = JSON.parse(call.function.arguments);
  assert.equal(typeof args.city, 'string');

  // The application runs the tool and sends its result in the next run.
  agent.addMessage({ id: randomUUID(), role: 'tool', toolCallId: call.id, content: `sunny in ${args.city}` });
  const second = await agent.runAgent({ runId: randomUUID(), tools: [weather] });
  events = parseSSE(await raw[1]);
  validate(events);
  checkStructure(events);
  assert.ok(!events.some((e) => /^TOOL_CALL_/.test(e.type)), 'the result is not echoed back');
  assert.equal(typeof second.result, 'string');
  assert.ok(second.result.includes(`sunny in ${args.city}`), `the answer uses the result: ${second.result}`);
  assert.ok(second.newMessages.some((m) => m.role === 'assistant' && m.content === second.result));
  assert.equal(agent.messages.filter((m) => m.role === 'tool').length, 1, 'one tool message on the thread');
});

test('front-end tools and context out of bounds or clashing: the client gets the 400 and its reason', async () => {
  const clash = new HttpAgent({ url: `${baseURL}/agents/planner` });
  clash.addMessage({ id: randomUUID(), role: 'user', content: 'hi' });
  await assert.rejects(
    clash.runAgent({ tools: [{ name: 'TodoWrite', description: 'the page\'s own list' }] }),
    (err) => err.status === 400 && /TodoWrite.*agent planner has a tool of that name/.test(err.payload.error),
  );
  const many = Array.from({ length: 65 }, (_, i) => ({ description: `entry ${i}`, value: 'v' }));
  const { agent } = recordingAgent(`${baseURL}/`);
  agent.addMessage({ id: randomUUID(), role: 'user', content: 'hi' });
  await assert.rejects(agent.runAgent({ context: many }),
    (err) => err.status === 400 && /context has 65 entries, more than the 64 allowed/.test(err.payload.error));
  // Within bounds the run goes on.
  const ok = await agent.runAgent({ context: [{ description: 'the user\'s city', value: 'Paris' }] });
  assert.equal(typeof ok.result, 'string');
});

test('resume: the server never interrupts, so a resume is a 400 the client shows', async () => {
  const { agent } = recordingAgent(`${baseURL}/`);
  agent.addMessage({ id: randomUUID(), role: 'user', content: 'hi' });
  await assert.rejects(agent.runAgent({ resume: [{ interruptId: 'per_1', status: 'resolved', payload: { reply: 'allow_once' } }] }),
    (err) => err.status === 400 && /never ends a run with an interrupt/.test(err.payload.error));
});
