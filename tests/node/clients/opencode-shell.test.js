// The real OpenCode TUI (opencode-ai 1.18.33, `opencode attach`) in tmux
// against `agentpool serve opencode`: a user's `!cmd` runs through the
// agent's Bash tool and its output is shown in the session.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { assertBinaries, cleanup, clientEnv, hasTmux, opencodeBin, repo, startOpencodeServer, tempDir, Tmux } from './helpers.js';

const manifest = path.join(repo, 'tests/node/clients/fixtures/shell.yaml');
let url;
let workdir;

before(async () => {
  assertBinaries();
  workdir = tempDir('agentpool-opencode-shell-');
  url = await startOpencodeServer(manifest, workdir);
});

after(cleanup);

test('OpenCode TUI: !echo runs in the workspace and shows its output', async () => {
  assert.ok(hasTmux(), 'tmux is needed to drive the TUI (make test-deps installs it)');
  const tui = new Tmux(`${opencodeBin} attach ${url}`, clientEnv(), workdir);
  try {
    await tui.waitFor(/Ask anything/, 'the prompt', 150000);
    // "!" at the start of the input switches it to shell mode; keys typed
    // while the TUI still loads are lost, so type it until the mode shows.
    for (let tries = 0; ; tries++) {
      tui.type('!');
      try {
        await tui.waitFor(/Shell/, 'shell mode', 2000);
        break;
      } catch (e) {
        if (tries === 10) throw e;
      }
    }
    tui.type('echo hi-from-the-shell > shell-out.txt; echo hi-from-the-shell');
    await tui.waitFor(/hi-from-the-shell > shell-out/, 'the typed command');
    tui.keys('Enter');
    const screen = await tui.waitFor(/┃ +hi-from-the-shell\s/, 'the command output');
    assert.doesNotMatch(screen, /No such route|Error:|not found/i);
    assert.equal(fs.readFileSync(path.join(workdir, 'shell-out.txt'), 'utf8'), 'hi-from-the-shell\n');
  } finally {
    tui.kill();
  }
});
