// The real OpenCode client (opencode-ai 1.18.33, the binary users install)
// against `agentpool serve opencode`: `opencode run --attach` in 20
// consecutive runs, and the TUI (`opencode attach`) in a terminal (tmux),
// where a user runs a delegating prompt and opens every child session.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import {
  assertBinaries,
  cleanup,
  clientEnv,
  hasTmux,
  nestedManifest,
  opencodeBin,
  run,
  startOpencodeServer,
  stripAnsi,
  tempDir,
  Tmux,
} from './helpers.js';

const prompt = 'Research nested teams';
const answer = 'Done: the squad researched nested teams, drafted a note and had both checked.';
let url;
let workdir;

before(async () => {
  assertBinaries();
  workdir = tempDir('agentpool-opencode-cwd-');
  url = await startOpencodeServer(nestedManifest, workdir);
});

after(cleanup);

const count = (s, sub) => s.split(sub).length - 1;

test('opencode run --attach: the answer every time, each delegation once, no echoed prompt', async () => {
  const env = clientEnv();
  for (let i = 1; i <= 20; i++) {
    const r = await run(opencodeBin, ['run', '--attach', url, prompt], { env, cwd: workdir, timeout: 90000 });
    // The answer goes to stdout, the progress lines to stderr.
    const out = stripAnsi(r.stdout);
    const progress = stripAnsi(r.stderr);
    const where = `run ${i}:\n--- stdout\n${out}\n--- stderr\n${progress}`;
    assert.equal(r.code, 0, where);
    assert.equal(count(out, answer), 1, `the answer once, ${where}`);
    // The root's one delegation (task → squad) completes once.
    assert.equal(count(progress, '✓ Research and write'), 1, `one completed delegation line, ${where}`);
    // The user's own prompt is not printed back.
    for (const line of (out + '\n' + progress).split('\n')) {
      assert.notEqual(line.trim().replace(/^"|"$/g, ''), prompt, `the prompt echoed, ${where}`);
    }
  }
});

test('OpenCode TUI: a delegating run live, every child session opened and left', async () => {
  assert.ok(hasTmux(), 'tmux is needed to drive the TUI (make test-deps installs it)');
  const env = clientEnv();
  const tui = new Tmux(`${opencodeBin} attach ${url}`, env, workdir);
  try {
    await tui.waitFor(/Ask anything/, 'the prompt');
    // Keys typed while the TUI still loads are lost: type until the input
    // shows the text.
    for (let tries = 0; ; tries++) {
      tui.type(prompt);
      try {
        await tui.waitFor(new RegExp(prompt), 'the typed prompt', 2000);
        break;
      } catch (e) {
        if (tries === 10) throw e;
      }
    }
    tui.keys('Enter');
    let screen = await tui.waitFor(new RegExp(answer.slice(0, 40)), 'the answer');
    assert.doesNotMatch(screen, /No such route|Error:/);
    assert.match(screen, /✓ Squad Task — Research and write/);
    assert.doesNotMatch(screen, /Delegating/, 'a delegation still shown as running after the run');

    // The root's child (the squad team), with the keyboard.
    tui.keys('C-x');
    tui.keys('Down');
    await tui.waitFor(/Squad \(1 of 1\)/, 'the squad child session');
    // The session's messages are fetched after its header is drawn.
    await tui.waitFor(/Find out how nested teams work/, "the squad's prompt");
    // Deeper, by clicking the task parts: a team member (pipeline), its
    // member (editor) and the editor's worker (checker).
    await tui.open('Pipeline Task', /Pipeline \(\d of 2\)/, 'the pipeline team member');
    await tui.open('Editor Task', /Editor \(\d of 2\)/, 'the editor member');
    await tui.open('Checker Task', /Checker \(1 of 1\)/, "the editor's worker");
    await tui.waitFor(/Checked: correct\./, "the worker's answer");
    // And back to the root, one parent at a time.
    for (const parent of [/Editor \(/, /Pipeline \(/, /Squad \(/]) {
      tui.keys('Up');
      await tui.waitFor(parent, `the parent ${parent}`);
    }
    tui.keys('Up');
    screen = await tui.waitFor(new RegExp(answer.slice(0, 40)), 'the root session');
    assert.doesNotMatch(screen, /\(\d of \d\)/);
  } finally {
    tui.kill();
  }
});
