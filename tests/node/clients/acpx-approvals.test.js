// Approvals over ACP with acpx 0.19.1, a headless ACP client written by
// others, running `agentpool serve acp` as its agent: lead --task--> mid
// --task--> writer, whose Write asks (Write's rule is "ask" by default).
// The editor approves the grandchild's Write (--approve-all) and the file
// is written; it rejects it (--deny-all) and the writer sees the
// rejection; and, asked on a terminal, acpx is interrupted while its
// y/N question is open: the agent withdraws the question
// ($/cancel_request) and the prompt ends cancelled.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { acpxBin, assertBinaries, bin, cleanup, clientEnv, hasTmux, repo, run, tempDir, Tmux } from './helpers.js';

after(cleanup);

const manifest = path.join(repo, 'tests/node/clients/fixtures/approval-deep.yaml');
const agent = (db) => `${bin} serve acp -c ${manifest} --db ${db}`;
const title = 'writer (child of mid): Write hello.md';

// messages parses acpx's --format json output: the ACP messages it saw,
// one per line.
function messages(stdout) {
  return stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
}

// checkAsked checks the one session/request_permission acpx got: titled
// with the asking grandchild, it names the one card acpx was shown for
// the delegation (acpx announces no _meta.agentpool extension): the
// lead's task call (shown before as "Delegate on"), and comes right after
// that call's pending tool_call, with the same title, kind and status.
const cardTitle = 'Delegate on';
function checkAsked(msgs, where) {
  const asks = msgs.filter((m) => m.method === 'session/request_permission');
  assert.equal(asks.length, 1, `requests ${asks.length}${where}`);
  const ask = asks[0];
  const tc = ask.params.toolCall;
  assert.equal(tc.title, title, where);
  assert.doesNotMatch(tc.toolCallId, /^spawn:/, where);
  const i = msgs.indexOf(ask);
  const before = msgs[i - 1]?.params?.update;
  assert.equal(before?.sessionUpdate, 'tool_call', where);
  for (const k of ['toolCallId', 'title', 'kind', 'status']) assert.equal(before[k], tc[k], `${k}${where}`);
  assert.equal(tc.status, 'pending', where);
  const shown = msgs
    .slice(0, i - 1)
    .some((m) => m.params?.update?.toolCallId === tc.toolCallId && m.params.update.title === cardTitle);
  assert.ok(shown, `the card was not shown before it asked${where}`);
  return tc.toolCallId;
}

test('acpx: the editor approves a grandchild\'s Write', async () => {
  assertBinaries();
  const cwd = tempDir('agentpool-acpx-approve-');
  const r = await run(acpxBin, ['--agent', agent(':memory:'), '--approve-all', '--format', 'json', 'exec', 'Write it'], {
    env: clientEnv(),
    cwd,
    timeout: 90000,
  });
  const where = `\n${r.stdout}\n${r.stderr}`;
  assert.equal(r.code, 0, where);
  const msgs = messages(r.stdout);
  const card = checkAsked(msgs, where);
  const answer = msgs.find((m) => m.result?.outcome);
  assert.deepEqual(answer.result.outcome, { outcome: 'selected', optionId: 'allow_once' }, where);
  assert.equal(readFileSync(path.join(cwd, 'hello.md'), 'utf8'), 'hello from the grandchild\n', where);
  // The card is the lead's task call again, and it completed.
  const last = msgs.filter((m) => m.params?.update?.toolCallId === card).at(-1).params.update;
  assert.equal(last.status, 'completed', where);
  const titles = msgs.filter((m) => m.params?.update?.toolCallId === card && m.params.update.title).map((m) => m.params.update.title);
  assert.equal(titles.at(-1), cardTitle, where);
  assert.equal(msgs.at(-1).result?.stopReason, 'end_turn', where);
});

test('acpx: the editor rejects the Write; the writer sees it and goes on', async () => {
  const cwd = tempDir('agentpool-acpx-reject-');
  const r = await run(acpxBin, ['--agent', agent(':memory:'), '--deny-all', '--format', 'json', 'exec', 'Write it'], {
    env: clientEnv(),
    cwd,
    timeout: 90000,
  });
  const where = `\n${r.stdout}\n${r.stderr}`;
  // acpx's exit status for a denied permission.
  assert.equal(r.code, 5, where);
  const msgs = messages(r.stdout);
  const card = checkAsked(msgs, where);
  const answer = msgs.find((m) => m.result?.outcome);
  assert.deepEqual(answer.result.outcome, { outcome: 'selected', optionId: 'reject_once' }, where);
  assert.ok(!existsSync(path.join(cwd, 'hello.md')), `a rejected Write wrote the file${where}`);
  // The writer's answer (nested in the card's last content) is the rejection.
  const end = msgs.filter((m) => m.params?.update?.toolCallId === card).at(-1).params.update;
  assert.equal(end.status, 'completed', where);
  assert.match(JSON.stringify(end.content), /approval rejected: rejected by the user in acp/, where);
  assert.equal(msgs.at(-1).result?.stopReason, 'end_turn', where);
});

test('acpx: interrupted while asking, the question is withdrawn and the prompt cancelled', async (t) => {
  assert.ok(hasTmux(), 'tmux is needed for acpx to ask on a terminal (make test-deps installs it)');
  const cwd = tempDir('agentpool-acpx-cancel-');
  const db = path.join(tempDir('agentpool-acpx-db-'), 'sessions.db');
  // acpx asks y/N only on a terminal. Ctrl-C typed at its question
  // answers "No"; SIGINT to the process (as from kill or a supervisor)
  // makes it cancel the prompt (session/cancel).
  const tty = new Tmux(`${acpxBin} --agent '${agent(db)}' exec 'Write it'; echo EXIT=$?; sleep 60`, clientEnv(), cwd);
  try {
    await tty.waitFor(new RegExp(`\\[permission\\] Allow ${title.replace(/[()]/g, '\\$&')} \\[edit\\]\\? \\(y/N\\)`), 'the question');
    const shell = tty.tmux('display-message', '-p', '-t', 'main', '#{pane_pid}').trim();
    const acpx = execFileSync('pgrep', ['-P', shell], { encoding: 'utf8' }).trim().split('\n')[0];
    process.kill(Number(acpx), 'SIGINT');
    await tty.waitFor(/EXIT=\d+/, 'the end of acpx');
    const screen = tty.tmux('capture-pane', '-p', '-S', '-200', '-t', 'main');
    // SIGINT makes acpx send session/cancel and drop its own question at
    // once; whether our $/cancel_request (the withdrawal) reaches it
    // before it stops listening is a race between the two processes (lost
    // under load). The wire of the withdrawal is pinned by server/acp's
    // approval_cancel golden test; here what the user sees must hold.
    if (!/\[client\] \$\/cancel_request/.test(screen)) {
      t.diagnostic('acpx stopped listening before the $/cancel_request arrived');
    }
    assert.match(screen, /Cancelled by the user\./, screen);
    assert.match(screen, /\[done\] cancelled/, screen);
    // acpx's exit status for a cancelled permission request.
    assert.match(screen, /EXIT=5/, screen);
  } finally {
    tty.kill();
  }
  assert.ok(!existsSync(path.join(cwd, 'hello.md')), 'a cancelled Write wrote the file');
  // The store agrees: the run and its descendants ended aborted.
  const list = await run(bin, ['sessions', 'list', '--db', db], { timeout: 20000 });
  assert.equal(list.code, 0, list.stderr);
  const rows = list.stdout.split('\n').filter((l) => l.startsWith('ses_'));
  assert.equal(rows.length, 3, list.stdout);
  for (const row of rows) assert.match(row, /\baborted\b/, list.stdout);
});
