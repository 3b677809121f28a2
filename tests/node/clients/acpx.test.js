// acpx 0.19.1, a headless ACP client written by others, runs
// `agentpool serve acp` as its agent: a delegating prompt, where each
// delegation is one tool call whose output is shown once and reads as
// text, and a prompt
// cancelled with Ctrl-C, whose child reads "Cancelled by the user.".
import { test, after } from 'node:test';
import assert from 'node:assert/strict';

import { acpxBin, assertBinaries, bin, cleanup, clientEnv, nestedManifest, run, slowManifest, tempDir } from './helpers.js';

after(cleanup);

// blocks splits acpx's text output into its "[tool] ..." blocks.
function toolBlocks(out) {
  return out
    .split(/\n(?=\[tool\] )/)
    .filter((b) => b.startsWith('[tool] '))
    .map((b) => ({ head: b.split('\n')[0], body: b }));
}

// agent is the agent command acpx runs (an argument string it splits).
const agent = (manifest, db) => `${bin} serve acp -c ${manifest} --db ${db}`;

test('acpx: a delegating prompt shows every delegation once, as text', async () => {
  assertBinaries();
  const cwd = tempDir('agentpool-acpx-');
  const r = await run(acpxBin, ['--agent', agent(nestedManifest, ':memory:'), '--approve-all', 'exec', 'Research nested teams'], {
    env: clientEnv(),
    cwd,
    timeout: 90000,
  });
  const where = `\n${r.stdout}\n${r.stderr}`;
  assert.equal(r.code, 0, where);
  assert.match(r.stdout, /\[done\] end_turn/, where);
  assert.match(r.stdout, /Done: the squad researched nested teams/, where);
  // acpx announces no _meta.agentpool extension: each delegation is one
  // tool call, the lead's task call, with the squad's members nested in
  // its content; no spawn tool call besides.
  assert.doesNotMatch(r.stdout, /Spawned: /, where);
  const done = toolBlocks(r.stdout).filter((b) => /\((completed|failed)\)$/.test(b.head));
  assert.equal(done.length, 1, `${done.length} finished tool calls${where}`);
  assert.match(done[0].body, /→ spawned /, `the members are not nested in the task call${where}`);
  for (const b of done) {
    const output = b.body.split('\n  output:\n')[1];
    assert.ok(output, `no output in ${b.head}${where}`);
    const text = output.trim();
    // The output once (not content and rawOutput both), as text (not the
    // JSON the model gets).
    const first = text.split('\n')[0].trim();
    assert.equal(text.split(first).length - 1, 1, `output shown twice in ${b.head}:\n${b.body}`);
    assert.doesNotMatch(text, /^\{"output"|"session_id"/, `JSON output in ${b.head}:\n${b.body}`);
  }
});

test('acpx: Ctrl-C cancels the prompt; the child reads "Cancelled by the user."', async () => {
  const cwd = tempDir('agentpool-acpx-');
  const db = `${tempDir('agentpool-acpx-db-')}/sessions.db`;
  let interrupted = false;
  const r = await run(acpxBin, ['--agent', agent(slowManifest, db), '--approve-all', 'exec', 'Work slowly'], {
    env: clientEnv(),
    cwd,
    timeout: 60000,
    // Once the slow child runs, press Ctrl-C (SIGINT): acpx sends
    // session/cancel and waits for the prompt's answer.
    onStdout: (out, p) => {
      if (!interrupted && /\[tool\] Slow work \(running\)/.test(out)) {
        interrupted = true;
        setTimeout(() => p.kill('SIGINT'), 300);
      }
    },
  });
  const where = `\n${r.stdout}\n${r.stderr}`;
  assert.ok(interrupted, `the child never ran${where}`);
  assert.equal(r.code, 0, where);
  assert.match(r.stdout, /\[done\] cancelled/, where);
  assert.match(r.stdout, /Cancelled by the user\./, where);
  assert.doesNotMatch(r.stdout + r.stderr, /context canceled/, where);
  // The store agrees: the run and its child ended aborted.
  const list = await run(bin, ['sessions', 'list', '--db', db], { timeout: 20000 });
  assert.equal(list.code, 0, list.stderr);
  const rows = list.stdout.split('\n').filter((l) => l.startsWith('ses_'));
  assert.equal(rows.length, 2, list.stdout);
  for (const row of rows) assert.match(row, /\baborted\b/, list.stdout);
});
