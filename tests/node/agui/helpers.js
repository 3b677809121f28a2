// Helpers of the AG-UI suite: start `agentpool serve agui`, record what
// the real client (@ag-ui/client 1.0.0) receives, and check every event
// against @ag-ui/core's schemas and the nesting rules the client enforces.
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { HttpAgent } from '@ag-ui/client';
import { EventSchemas } from '@ag-ui/core/schemas';

import { serve } from '../lib/serve.js';

export const here = path.dirname(fileURLToPath(import.meta.url));
export const repo = path.resolve(here, '../../..');
export const bin = process.env.AGENTPOOL_BIN || path.join(repo, 'bin/agentpool');

// startServer runs `agentpool serve agui` on a free loopback port with the
// given flags; stop() ends it.
export const startServer = (args) => serve(bin, 'agui', args);

// Schemas by event type, to check that no event carries a key its schema
// does not describe (the client would strip it).
const schemaByType = new Map(EventSchemas.options.map((s) => [s.shape.type.value, s]));

export function parseSSE(text) {
  assert.ok(!text.includes('\r'), 'SSE stream uses LF only');
  const frames = text.split('\n\n');
  assert.equal(frames.pop(), '', 'stream ends with a blank line');
  return frames.map((f) => {
    assert.ok(f.startsWith('data: '), `frame is a data field: ${f.slice(0, 80)}`);
    assert.ok(!f.includes('\n'), 'one data line per event');
    return JSON.parse(f.slice(6));
  });
}

// No null anywhere, except inside state snapshots, custom values and
// metadata, which carry the application's data (where null is a value).
function assertNoNull(v, where) {
  if (v === null) assert.fail(`null at ${where}`);
  if (/\.(snapshot|value|metadata)$/.test(where)) return;
  if (typeof v === 'object') for (const [k, x] of Object.entries(v)) assertNoNull(x, `${where}.${k}`);
}

export function validate(events) {
  for (const [i, e] of events.entries()) {
    const where = `event ${i} (${e.type})`;
    try {
      EventSchemas.parse(e);
    } catch (err) {
      assert.fail(`${where} fails the schema: ${err.message}\n${JSON.stringify(e)}`);
    }
    const shape = schemaByType.get(e.type).shape;
    for (const k of Object.keys(e)) assert.ok(k in shape, `${where}: key ${k} is not in the schema`);
    assertNoNull(e, where);
    if ('timestamp' in e) assert.ok(Number.isInteger(e.timestamp), `${where}: integer timestamp`);
  }
}

// Checks the nesting rules the client enforces, on the raw stream.
export function checkStructure(events) {
  assert.equal(events[0].type, 'RUN_STARTED');
  const last = events.at(-1);
  assert.equal(last.type, 'RUN_FINISHED');
  const open = new Set();
  const started = new Map(); // subagentRunId -> SUBAGENT_STARTED
  const active = new Set();
  const key = (e) => `${e.subagentRunId ?? ''}|${e.messageId ?? e.toolCallId ?? e.stepName}`;
  for (const e of events) {
    if (e.subagentRunId && !e.type.startsWith('SUBAGENT_')) {
      assert.ok(active.has(e.subagentRunId), `${e.type} attributed to inactive subagent ${e.subagentRunId}`);
    }
    const m = e.type.match(/^(TEXT_MESSAGE|TOOL_CALL|REASONING_MESSAGE|REASONING|STEP)_(START|STARTED|END|FINISHED)$/);
    if (m) {
      const k = `${m[1]}:${key(e)}`;
      if (m[2].startsWith('START')) {
        assert.ok(!open.has(k), `${k} opened twice`);
        open.add(k);
      } else {
        assert.ok(open.delete(k), `${k} closed without being open`);
      }
    }
    switch (e.type) {
      case 'SUBAGENT_STARTED':
        assert.ok(!started.has(e.subagentRunId), `subagentRunId ${e.subagentRunId} reused`);
        if (e.parentSubagentRunId) assert.ok(started.has(e.parentSubagentRunId), 'parent subagent started first');
        started.set(e.subagentRunId, e);
        active.add(e.subagentRunId);
        break;
      case 'SUBAGENT_FINISHED':
      case 'SUBAGENT_ERROR':
        assert.ok(active.delete(e.subagentRunId), `${e.type} for inactive ${e.subagentRunId}`);
        break;
    }
  }
  assert.deepEqual([...open], [], 'everything is closed before RUN_FINISHED');
  assert.deepEqual([...active], [], 'every subagent ended before RUN_FINISHED');
  return started;
}

// An HttpAgent whose fetch keeps a copy of the raw response body.
export function recordingAgent(url, opts = {}) {
  const raw = [];
  const agent = new HttpAgent({
    url,
    ...opts,
    fetch: async (u, init) => {
      const res = await fetch(u, init);
      raw.push(res.clone().text());
      return res;
    },
  });
  return { agent, raw };
}

export async function withWarnings(fn) {
  const warnings = [];
  const orig = console.warn;
  console.warn = (...args) => warnings.push(args.join(' '));
  try {
    return { value: await fn(), warnings };
  } finally {
    console.warn = orig;
  }
}

// activityCall finds a subagent's tool call named name in the raw stream's
// ACTIVITY_DELTA patches (a child's tool calls are entries of its activity
// message, not messages of the run): its id, subagentRunId, and the
// indexes of the events that added it and its result, with the result.
export function activityCall(events, name) {
  const calls = new Map(); // messageId -> number of tool calls added
  let found;
  for (const [i, e] of events.entries()) {
    if (e.type !== 'ACTIVITY_DELTA') continue;
    for (const op of e.patch) {
      if (op.op === 'add' && op.path === '/toolCalls/-') {
        const n = calls.get(e.messageId) ?? 0;
        calls.set(e.messageId, n + 1);
        if (!found && op.value.name === name) {
          found = { toolCallId: op.value.id, subagentRunId: e.subagentRunId, messageId: e.messageId, index: n, addedAt: i };
        }
      } else if (found && e.messageId === found.messageId && op.path === `/toolCalls/${found.index}/result`) {
        found.resultAt = i;
        found.result = op.value;
      }
    }
  }
  return found;
}

// activityAppends collects the raw stream's appends to the lists of an
// activity (a message's content pieces, a call's argument pieces): by
// "messageId path" (the path without its "/-"), the pieces in order.
export function activityAppends(events) {
  const out = new Map();
  for (const e of events) {
    if (e.type !== 'ACTIVITY_DELTA') continue;
    for (const op of e.patch) {
      if (op.op !== 'add' || !/^\/(messages|toolCalls)\/\d+\/(content|args)\/-$/.test(op.path)) continue;
      const key = `${e.messageId} ${op.path.slice(0, -2)}`;
      out.set(key, [...(out.get(key) ?? []), op.value]);
    }
  }
  return out;
}
