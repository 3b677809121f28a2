// The real OpenCode TUI (opencode-ai 1.18.33, `opencode attach`) in tmux
// on a delegating run (fixtures/tree.yaml: lead --task--> mid --task-->
// writer, which rewrites notes.md; lead writes lead.md): /undo and /redo,
// /compact, !cmd, fork, /init and the project's commands, /share, the
// child sessions with the TUI's keys. A Recorder between the TUI and
// agentpool keeps what the TUI asked for and what it got.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import {
  assertBinaries,
  cleanup,
  clientEnv,
  hasTmux,
  opencodeBin,
  Recorder,
  repo,
  startOpencodeServer,
  tempDir,
  Tmux,
} from './helpers.js';

const tree = path.join(repo, 'tests/node/clients/fixtures/tree.yaml');
const leadDone = 'Lead done: the notes are written.';
const recorders = [];

after(async () => {
  for (const r of recorders) r.close();
  await cleanup();
});

// start serves manifest in a new workspace (prepared by setup) through a
// Recorder and opens the TUI on it.
async function start(manifest, setup) {
  assertBinaries();
  assert.ok(hasTmux(), 'tmux is needed to drive the TUI (make test-deps installs it)');
  const dir = tempDir('agentpool-tui-');
  setup?.(dir);
  const server = await startOpencodeServer(manifest, dir);
  const rec = new Recorder(server);
  recorders.push(rec);
  const url = await rec.start();
  const tui = new Tmux(`${opencodeBin} attach ${url}`, clientEnv(), dir);
  await tui.waitFor(/Ask anything/, 'the prompt');
  return { dir, server, rec, tui };
}

// typeIn types text into the input until it shows (keys typed while the
// TUI still loads are lost).
async function typeIn(tui, text, shown = text) {
  for (let tries = 0; ; tries++) {
    tui.type(text);
    try {
      return await tui.waitFor(new RegExp(escape(shown)), `the typed "${text}"`, 2000);
    } catch (e) {
      if (tries === 10) throw e;
      tui.keys('C-u');
    }
  }
}

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// prompt sends text and waits for the TUI's POST of it to be answered
// and for done on the screen.
async function prompt(t, text, done = leadDone) {
  const before = t.rec.find(/^POST \/session\/[^/]+\/message/).length;
  await typeIn(t.tui, text);
  t.tui.keys('Enter');
  await waitUntil(() => t.rec.find(/^POST \/session\/[^/]+\/message/).filter((r) => r.end).length > before, 'the prompt answered', t.rec);
  return t.tui.waitFor(new RegExp(escape(done)), `"${done}"`);
}

// slash runs the TUI's command /name: typed, picked from the list it
// shows, run with Enter.
async function slash(tui, name) {
  tui.keys('C-u');
  await typeIn(tui, `/${name}`);
  await tui.waitFor(new RegExp(`/${name}\\s{2,}\\S`), `/${name} in the command list`);
  tui.keys('Enter');
}

async function waitUntil(cond, what, rec, timeout = 30000) {
  const deadline = Date.now() + timeout;
  while (Date.now() < deadline) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  const seen = rec ? rec.requests.map((r) => `${r.method} ${r.path} ${r.status ?? '…'}`).join('\n') : '';
  throw new Error(`timed out waiting for ${what}\n${seen}`);
}

async function getJSON(base, p) {
  const r = await fetch(base + p);
  assert.equal(r.status, 200, `GET ${p}`);
  return r.json();
}

// rootID is the session the TUI created.
function rootID(rec) {
  const r = rec.find(/^POST \/session(\?|$)/).find((x) => x.status === 200);
  assert.ok(r, 'the TUI created a session');
  return JSON.parse(r.answer).id;
}

const read = (dir, f) => (fs.existsSync(path.join(dir, f)) ? fs.readFileSync(path.join(dir, f), 'utf8') : null);

test('TUI /undo and /redo on a delegating run: files and transcript back, then forward', async () => {
  const t = await start(tree, (dir) => fs.writeFileSync(path.join(dir, 'notes.md'), 'original notes\n'));
  try {
    let screen = await prompt(t, 'Write the notes');
    assert.match(screen, /✓ Mid Task — Plan the notes/);
    assert.equal(read(t.dir, 'notes.md'), 'notes by the grandchild\n', 'the grandchild rewrote notes.md');
    assert.equal(read(t.dir, 'lead.md'), 'written by the lead\n');
    const root = rootID(t.rec);
    const kids = await getJSON(t.server, `/session/${root}/children`);
    assert.equal(kids.length, 1);

    await slash(t.tui, 'undo');
    const rv = await t.rec.waitFor(/^POST \/session\/[^/]+\/revert/, 'the revert');
    assert.equal(rv.status, 200, rv.answer);
    // The turn is gone from the transcript, its prompt back in the input.
    screen = await t.tui.waitFor(/^(?![\s\S]*Lead done)(?![\s\S]*Mid Task)[\s\S]*Write the notes/, 'the reverted transcript');
    assert.doesNotMatch(screen, /Error|undefined/);
    // The files of the whole tree are as before the prompt.
    assert.equal(read(t.dir, 'notes.md'), 'original notes\n', "the grandchild's change undone");
    assert.equal(read(t.dir, 'lead.md'), null, "the lead's new file removed");
    // The children stay (the record of the reverted turn; /redo links
    // them again), listed as children, no longer shown in the root.
    assert.deepEqual((await getJSON(t.server, `/session/${root}/children`)).map((s) => s.id), kids.map((s) => s.id));

    await slash(t.tui, 'redo');
    const un = await t.rec.waitFor(/^POST \/session\/[^/]+\/unrevert/, 'the unrevert');
    assert.equal(un.status, 200, un.answer);
    screen = await t.tui.waitFor(new RegExp(`Mid Task[\\s\\S]*${escape(leadDone)}`), 'the turn back');
    assert.equal(read(t.dir, 'notes.md'), 'notes by the grandchild\n');
    assert.equal(read(t.dir, 'lead.md'), 'written by the lead\n');
    // The task part links its child again.
    t.tui.keys('C-x');
    t.tui.keys('Down');
    await t.tui.waitFor(/Mid \(1 of 1\)/, 'the child session, opened from the redone turn');
  } finally {
    t.tui.kill();
  }
});
