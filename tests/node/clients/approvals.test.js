// Approvals with the real OpenCode client (opencode-ai 1.18.33): a child's
// Write asks (Write's rule is "ask" by default), the TUI shows OpenCode's
// own permission prompt, and the user's answer decides: allow writes the
// file, reject (with a message) makes the child see the rejection and the
// run go on. A grandchild's Write asks in the root's view too (the TUI
// shows the prompts of a root and its children only: the server shows a
// deeper request on the root's child it descends from). `opencode run --attach` answers permissions itself: it
// rejects them, or, with --auto, allows them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';

import {
  assertBinaries,
  cleanup,
  clientEnv,
  hasTmux,
  opencodeBin,
  repo,
  run,
  startOpencodeServer,
  stripAnsi,
  tempDir,
  Tmux,
} from './helpers.js';

const manifest = path.join(repo, 'tests/node/clients/fixtures/approval.yaml');
const answer = 'Lead done: the writer has finished.';
let url;
let workdir;
let file;

before(async () => {
  assertBinaries();
  workdir = tempDir('agentpool-approvals-cwd-');
  file = path.join(workdir, 'hello.md');
  url = await startOpencodeServer(manifest, workdir);
});

after(cleanup);

// pending lists the server's pending permission requests.
async function pending() {
  const r = await fetch(`${url}/permission`);
  assert.equal(r.status, 200);
  return r.json();
}

// prompt types text into the TUI's input until it shows, then sends it
// (keys typed while the TUI still loads are lost).
async function prompt(tui, text) {
  for (let tries = 0; ; tries++) {
    tui.type(text);
    try {
      await tui.waitFor(new RegExp(text), 'the typed prompt', 2000);
      break;
    } catch (e) {
      if (tries === 10) throw e;
    }
  }
  tui.keys('Enter');
}

test("OpenCode TUI: a child's Write asks; allow writes the file, reject reaches the child", async () => {
  assert.ok(hasTmux(), 'tmux is needed to drive the TUI (make test-deps installs it)');
  rmSync(file, { force: true });
  const tui = new Tmux(`${opencodeBin} attach ${url}`, clientEnv(), workdir);
  try {
    await tui.waitFor(/Ask anything/, 'the prompt', 150000);

    // Allow once: the prompt names the file and shows the diff.
    await prompt(tui, 'Write the note');
    let screen = await tui.waitFor(/Permission required/, 'the permission prompt');
    assert.match(screen, /Edit hello\.md/);
    assert.match(screen, /\+ hello from the writer/);
    assert.match(screen, /Allow once\s+Allow always\s+Reject/);
    const [req] = await pending();
    assert.equal(req.permission, 'edit');
    assert.deepEqual(req.patterns, ['hello.md']);
    assert.equal(existsSync(file), false, 'the file was written before the answer');
    tui.keys('Enter'); // Allow once is selected
    screen = await tui.waitFor(new RegExp(answer), 'the answer after allowing');
    assert.doesNotMatch(screen, /Permission required/);
    assert.equal(readFileSync(file, 'utf8'), 'hello from the writer\n');
    assert.deepEqual(await pending(), []);

    // Reject with a message: no file; the run goes on; the child saw why.
    rmSync(file);
    await prompt(tui, 'Write it again');
    await tui.waitFor(/Permission required/, 'the second permission prompt');
    tui.keys('Right');
    tui.keys('Right');
    await tui.waitFor(/Reject\s/, 'the reject option');
    tui.keys('Enter');
    await tui.waitFor(/Reject permission/, 'the rejection message input');
    tui.type('use notes.md instead');
    tui.keys('Enter');
    screen = await tui.waitFor(/Write it again[\s\S]*Lead done: the writer has finished/, 'the answer after rejecting');
    assert.equal(existsSync(file), false, 'the rejected Write happened');
    assert.deepEqual(await pending(), []);
    // The child's own view: its tool result is the rejection, with the
    // user's words.
    tui.keys('C-x');
    tui.keys('Down');
    screen = await tui.waitFor(/approval rejected/, "the child's rejected Write");
    assert.match(stripAnsi(screen).replace(/\s+/g, ' '), /rejected by the user in opencode: use notes\.md instead/);
  } finally {
    tui.kill();
  }
});

test("OpenCode TUI: a grandchild's Write asks in the root's view; allow writes the file", async () => {
  assert.ok(hasTmux(), 'tmux is needed to drive the TUI (make test-deps installs it)');
  const dir = tempDir('agentpool-approvals-deep-');
  const deepUrl = await startOpencodeServer(path.join(repo, 'tests/node/clients/fixtures/approval-deep.yaml'), dir);
  const tui = new Tmux(`${opencodeBin} attach ${deepUrl}`, clientEnv(), dir);
  try {
    await tui.waitFor(/Ask anything/, 'the prompt', 150000);
    await prompt(tui, 'Go deep');
    const screen = await tui.waitFor(/Permission required/, "the grandchild's permission prompt");
    assert.match(screen, /Edit hello\.md/);
    const r = await fetch(`${deepUrl}/permission`);
    const [req] = await r.json();
    assert.ok(req.metadata.sessionID, 'metadata.sessionID names the grandchild');
    assert.notEqual(req.metadata.sessionID, req.sessionID);
    tui.keys('Enter'); // Allow once
    await tui.waitFor(/Lead done: mid and the writer have finished/, 'the answer after allowing');
    assert.equal(readFileSync(path.join(dir, 'hello.md'), 'utf8'), 'hello from the grandchild\n');
  } finally {
    tui.kill();
  }
});

test('opencode run --attach: rejects the permission and goes on; --auto allows it', async () => {
  const env = clientEnv();
  rmSync(file, { force: true });
  let r = await run(opencodeBin, ['run', '--attach', url, 'Write the note'], { env, cwd: workdir, timeout: 90000 });
  let where = `--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;
  assert.equal(r.code, 0, where);
  assert.match(stripAnsi(r.stdout), new RegExp(answer), where);
  assert.match(stripAnsi(r.stderr), /permission requested: edit \(hello\.md\); auto-rejecting/, where);
  assert.equal(existsSync(file), false, 'the rejected Write happened');

  r = await run(opencodeBin, ['run', '--auto', '--attach', url, 'Write the note'], { env, cwd: workdir, timeout: 90000 });
  where = `--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;
  assert.equal(r.code, 0, where);
  assert.match(stripAnsi(r.stdout), new RegExp(answer), where);
  assert.equal(readFileSync(file, 'utf8'), 'hello from the writer\n', where);
  assert.deepEqual(await pending(), []);
});
