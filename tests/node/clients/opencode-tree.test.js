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
  manifest = setup?.(dir) ?? manifest;
  const server = await startOpencodeServer(manifest, dir);
  const rec = new Recorder(server);
  recorders.push(rec);
  const url = await rec.start();
  const tui = new Tmux(`${opencodeBin} attach ${url}`, clientEnv(), dir);
  // The TUI takes 10 to 100 s to start on a loaded 2-core machine.
  await tui.waitFor(/Ask anything/, 'the prompt', 150000);
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

// answerOf is the {info, parts} a recorded prompt was answered with.
const answerOf = (r) => JSON.parse(r.answer);

test('TUI /compact on a delegating run: the summary shown, the next prompt goes on from it', async () => {
  const t = await start(tree);
  try {
    await prompt(t, 'First round');
    await prompt(t, 'Second round');
    await slash(t.tui, 'compact');
    const sum = await t.rec.waitFor(/^POST \/session\/[^/]+\/summarize/, 'the summarize');
    assert.equal(sum.status, 200, sum.answer);
    // The summary of the turns before the latest one is the run's answer.
    const screen = await t.tui.waitFor(/Test model summary of \d+ messages\. Last prompt: "First round"/, 'the summary');
    assert.doesNotMatch(screen, /Error|undefined/);
    await prompt(t, 'Third round');
    // The third prompt's model input is the summary and the latest turn:
    // smaller than the second's (which held the whole first turn) grew by
    // a turn, which it would be without the summary.
    const posts = t.rec.find(/^POST \/session\/[^/]+\/message/).filter((r) => r.status === 200);
    const input = posts.map((r) => answerOf(r).info.tokens.input);
    assert.equal(input.length, 3);
    const turn = input[1] - input[0];
    assert.ok(turn > 0, `inputs ${input}`);
    assert.ok(input[2] < input[1] + turn, `the third prompt's input (${input[2]}) holds every earlier turn: inputs ${input}`);
  } finally {
    t.tui.kill();
  }
});

test('TUI !cmd on a session with children: the command runs and its output is shown', async () => {
  const t = await start(tree);
  try {
    await prompt(t, 'Write the notes');
    const root = rootID(t.rec);
    assert.equal((await getJSON(t.server, `/session/${root}/children`)).length, 1);
    t.tui.keys('C-u');
    for (let tries = 0; ; tries++) {
      t.tui.type('!');
      try {
        await t.tui.waitFor(/Shell/, 'shell mode', 2000);
        break;
      } catch (e) {
        if (tries === 10) throw e;
      }
    }
    await typeIn(t.tui, 'echo from-the-shell > shell.txt; ls', 'from-the-shell > shell.txt');
    t.tui.keys('Enter');
    const sh = await t.rec.waitFor(/^POST \/session\/[^/]+\/shell/, 'the shell command');
    assert.equal(sh.status, 200, sh.answer);
    const screen = await t.tui.waitFor(/┃ +lead\.md[\s\S]*┃ +notes\.md[\s\S]*┃ +shell\.txt/, 'the listing');
    assert.doesNotMatch(screen, /Error:|undefined/);
    assert.equal(read(t.dir, 'shell.txt'), 'from-the-shell\n');
    // The transcript keeps the delegation above the command.
    assert.match(screen, /Mid Task|view subagents/);
  } finally {
    t.tui.kill();
  }
});

test('TUI fork of a delegating run: a new session that goes on alone', async () => {
  const t = await start(tree);
  try {
    await prompt(t, 'Write the notes');
    const root = rootID(t.rec);
    await slash(t.tui, 'fork');
    await t.tui.waitFor(/Fork session[\s\S]*Full session/, 'the fork dialog');
    t.tui.keys('Enter');
    const fk = await t.rec.waitFor(/^POST \/session\/[^/]+\/fork/, 'the fork');
    assert.equal(fk.status, 200, fk.answer);
    const fork = JSON.parse(fk.answer).id;
    assert.notEqual(fork, root);
    // The TUI opens the fork: its copy of the transcript.
    await t.rec.waitFor(new RegExp(`^GET /session/${fork}/message`), "the fork's messages");
    await t.tui.waitFor(new RegExp(escape(leadDone)), "the fork's transcript");
    const before = (await getJSON(t.server, `/session/${root}/message`)).length;
    await prompt(t, 'Go on in the fork');
    const last = t.rec.find(/^POST \/session\/[^/]+\/message/).at(-1);
    assert.equal(last.path.split('/')[2], fork, 'the prompt went to the fork');
    assert.equal((await getJSON(t.server, `/session/${root}/message`)).length, before, 'the original is untouched');
    const forked = await getJSON(t.server, `/session/${fork}/message`);
    assert.ok(forked.length > before, `the fork went on: ${forked.length} messages`);
    assert.equal((await getJSON(t.server, `/session/${fork}/children`)).length, 1, "the fork's own delegation");
  } finally {
    t.tui.kill();
  }
});

test("TUI commands: '/' lists the project's and /init; a command and /init run", async () => {
  // The manifest in the workspace, with a Claude Code command beside it.
  const t = await start(null, (dir) => {
    fs.copyFileSync(tree, path.join(dir, 'agentpool.yaml'));
    fs.mkdirSync(path.join(dir, '.claude/commands'), { recursive: true });
    fs.writeFileSync(path.join(dir, '.claude/commands/recheck.md'), '---\ndescription: Check the notes again\n---\nCheck $ARGUMENTS once more.\n');
    return path.join(dir, 'agentpool.yaml');
  });
  try {
    const list = await t.rec.waitFor(/^GET \/command/, 'the command list');
    assert.deepEqual(JSON.parse(list.answer).map((c) => c.name).sort(), ['init', 'recheck']);
    t.tui.keys('C-u');
    await typeIn(t.tui, '/');
    await t.tui.waitFor(/\/init\s+create or update AGENTS\.md/, '/init in the list');
    t.tui.keys('C-u');
    await typeIn(t.tui, '/rech');
    let screen = await t.tui.waitFor(/\/recheck\s+Check the notes again/, 'the project command in the list');
    t.tui.keys('C-u');
    await typeIn(t.tui, '/recheck the lead file');
    t.tui.keys('Enter');
    const cmd = await t.rec.waitFor(/^POST \/session\/[^/]+\/command/, 'the command');
    assert.equal(cmd.status, 200, cmd.answer);
    assert.deepEqual(JSON.parse(cmd.body).command, 'recheck');
    screen = await t.tui.waitFor(new RegExp(`Check the lead file once more\\.[\\s\\S]*${escape(leadDone)}`), 'the command run');
    // A command of the server's list is put in the input; Enter sends it.
    await slash(t.tui, 'init');
    await t.tui.waitFor(/┃  \/init\s*\n/, '/init in the input');
    t.tui.keys('Enter');
    await waitUntil(() => t.rec.find(/^POST \/session\/[^/]+\/command/).filter((r) => r.end).length === 2, '/init run', t.rec);
    const init = t.rec.find(/^POST \/session\/[^/]+\/command/)[1];
    assert.equal(init.status, 200, init.answer);
    assert.equal(JSON.parse(init.body).command, 'init');
    await t.tui.waitFor(/write an AGENTS\.md file/, 'the /init prompt in the transcript');
  } finally {
    t.tui.kill();
  }
});

test('TUI /share: not offered (config share "disabled"); the route says it is not available', async () => {
  const t = await start(tree);
  try {
    await prompt(t, 'Write the notes');
    const cfg = await t.rec.waitFor(/^GET \/config(\?|$)/, 'the config');
    assert.equal(JSON.parse(cfg.answer).share, 'disabled');
    // The TUI lists no /share (it would read data.share.url of any answer
    // and show a TypeError instead of the route's text).
    t.tui.keys('C-u');
    await typeIn(t.tui, '/sha');
    const screen = await t.tui.waitFor(/┃  \/sha\s*\n/, 'the typed /sha');
    assert.doesNotMatch(screen, /\/share\s+Share session/);
    t.tui.keys('C-u');
    const root = rootID(t.rec);
    const r = await fetch(`${t.server}/session/${root}/share`, { method: 'POST' });
    assert.equal(r.status, 400);
    assert.match((await r.json()).data.message, /^sharing is not available: agentpool has no share service/);
  } finally {
    t.tui.kill();
  }
});

test('TUI children three deep: keys and clicks down, Up back; ten runs end with every task part done, no wait', async () => {
  const t = await start(tree);
  try {
    let global;
    const delays = [];
    for (let i = 1; i <= 10; i++) {
      await prompt(t, `Round ${i}`);
      // Once the run has ended (its prompt answered), the TUI settles on
      // the round's delegation completed: none stays shown as running.
      let screen = '';
      for (const deadline = Date.now() + 30000; ; ) {
        screen = t.tui.screen();
        const lines = screen.split('\n');
        const at = lines.findLastIndex((l) => l.includes(`Round ${i}`));
        const task = lines.slice(at).find((l) => l.includes('Mid Task'));
        if (at >= 0 && task?.includes('✓ Mid Task — Plan the notes') && !/esc interrupt/.test(screen)) break;
        assert.ok(Date.now() < deadline, `round ${i}: the task part not completed:\n${screen}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      assert.doesNotMatch(screen, /Delegating|~ Mid/, `round ${i}: a task part still running`);
      // No added latency: the first event of the prompt's run reaches the
      // TUI's stream at once, not after a fixed wait.
      global ??= t.rec.find(/^GET \/global\/event/)[0];
      const post = t.rec.find(/^POST \/session\/[^/]+\/message/).at(-1);
      const first = global.events.find((e) => e.t >= post.start && e.text.includes('"message.updated"'));
      assert.ok(first, `round ${i}: no event after the prompt`);
      delays.push(first.t - post.start);
    }
    // The median, as the machine may be loaded: a fixed 300 ms wait made
    // every one over 300 ms.
    delays.sort((a, b) => a - b);
    console.log(`first event after the prompt (ms, sorted): ${delays.join(' ')}`);
    assert.ok(delays[5] < 200, `first events ${delays} ms after their prompts`);
    // Depth 1 with the keys (the TUI's <leader>down opens the first child
    // of the session's family), depth 2 by a click on the task part (the
    // TUI has no key into a child's child), then Up at each depth.
    t.tui.keys('C-x');
    t.tui.keys('Down');
    await t.tui.waitFor(/Mid \(\d+ of 10\)/, 'the child');
    await t.tui.waitFor(/Writer Task — Write the notes/, "the child's task part");
    await t.tui.open('Writer Task', /Writer \(1 of 1\)/, 'the grandchild');
    await t.tui.waitFor(/Writer done: notes\.md rewritten\./, "the grandchild's answer");
    t.tui.keys('Up');
    await t.tui.waitFor(/Mid \(\d+ of 10\)/, 'back to the child');
    t.tui.keys('Up');
    const screen = await t.tui.waitFor(new RegExp(escape(leadDone)), 'back to the root');
    assert.doesNotMatch(screen, /\(\d+ of \d+\)/);
  } finally {
    t.tui.kill();
  }
});

test('TUI cancel of a delegating run: user-facing text, never Go\'s', async () => {
  const t = await start(path.join(repo, 'tests/node/clients/fixtures/slow.yaml'));
  try {
    await typeIn(t.tui, 'Work slowly');
    t.tui.keys('Enter');
    await t.tui.waitFor(/Slow Task|Slow work/, 'the running delegation');
    // Escape twice interrupts the session.
    for (let tries = 0; !t.rec.find(/^POST \/session\/[^/]+\/abort/).length; tries++) {
      assert.ok(tries < 20, 'the TUI never aborted');
      t.tui.keys('Escape');
      await new Promise((r) => setTimeout(r, 300));
    }
    const ab = await t.rec.waitFor(/^POST \/session\/[^/]+\/abort/, 'the abort');
    assert.equal(ab.status, 200);
    const screen = await t.tui.waitFor(/Cancelled by the user|aborted|interrupted/i, 'the cancel shown');
    assert.doesNotMatch(screen, /context canceled|context\.Canceled/);
    const root = rootID(t.rec);
    const msgs = JSON.stringify(await getJSON(t.server, `/session/${root}/message`));
    assert.doesNotMatch(msgs, /context canceled/);
  } finally {
    t.tui.kill();
  }
});

test("TUI failed child: the task part names the model's error", async () => {
  const t = await start(path.join(repo, 'tests/node/clients/fixtures/failing.yaml'));
  try {
    // The TUI shows the child's session.error as a toast (5 s; its lines
    // wrap in a box).
    await typeIn(t.tui, 'Try it');
    t.tui.keys('Enter');
    const screen = await t.tui.waitFor(/refused the request:[\s\S]{0,300}?exhausted[\s\S]{0,300}?model[\s\S]{0,200}?test\)/, "the child's error");
    assert.doesNotMatch(screen, /model test:/);
    await t.tui.waitFor(/Lead done: the child failed\./, 'the answer');
    // The parent's task part says it too.
    const root = rootID(t.rec);
    const parts = (await getJSON(t.server, `/session/${root}/message`)).flatMap((m) => m.parts);
    const task = parts.find((p) => p.type === 'tool' && p.tool === 'task');
    assert.equal(task.state.status, 'error');
    assert.equal(task.state.error, 'Failed: the provider refused the request: quota exhausted (model test)');
  } finally {
    t.tui.kill();
  }
});
