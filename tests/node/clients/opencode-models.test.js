// Choosing a model with the real OpenCode client (opencode-ai 1.18.33):
// `opencode run --attach URL --model provider/model` sends the model with
// its prompt, as the TUI sends the one /models chose; agentpool runs that
// turn of the root agent on it (fixtures/models.yaml), the child keeps its
// own, and a model the server does not offer is an error the client shows.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';

import {
  assertBinaries,
  cleanup,
  clientEnv,
  hasTmux,
  opencodeBin,
  Recorder,
  repo,
  run,
  startOpencodeServer,
  stripAnsi,
  tempDir,
  Tmux,
} from './helpers.js';

const manifest = path.join(repo, 'tests/node/clients/fixtures/models.yaml');
let server;
let rec;
let url;
let workdir;

before(async () => {
  assertBinaries();
  workdir = tempDir('agentpool-models-');
  server = await startOpencodeServer(manifest, workdir);
  rec = new Recorder(server);
  url = await rec.start();
});

after(async () => {
  rec?.close();
  await cleanup();
});

async function getJSON(p) {
  const r = await fetch(server + p);
  assert.equal(r.status, 200, `GET ${p}`);
  return r.json();
}

// lastPrompt is the body of the client's last POST of a prompt and the
// session it went to.
function lastPrompt() {
  const posts = rec.requests.filter((r) => r.method === 'POST' && /^\/session\/[^/?]+\/message/.test(r.path));
  assert.ok(posts.length > 0, 'the client posted a prompt');
  const p = posts.at(-1);
  return { sid: p.path.split('/')[2], body: JSON.parse(p.body), status: p.status };
}

test('opencode run --model: the turn runs on the chosen model, the child on its own', async () => {
  const env = clientEnv();
  let since = rec.requests.length;
  const r = await run(opencodeBin, ['run', '--attach', url, '--model', 'agentpool/planner', 'Make a plan'], {
    env,
    cwd: workdir,
    timeout: 150000,
  });
  const out = stripAnsi(r.stdout + '\n' + r.stderr);
  // What the client printed and what it was sent, and when.
  const where = (o) => `${o}\n--- the client's requests (ms)\n${rec.timeline(since)}`;
  assert.equal(r.code, 0, where(out));
  assert.match(out, /Planned with the helper's help\./, where(out));
  // opencode run prints the agent and the model of the answer.
  assert.match(out, /> lead · planner/, where(out));
  const { sid, body } = lastPrompt();
  assert.deepEqual(body.model, { providerID: 'agentpool', modelID: 'planner' });
  const msgs = await getJSON(`/session/${sid}/message`);
  const answers = msgs.filter((m) => m.info.role === 'assistant');
  assert.ok(answers.length >= 2, JSON.stringify(msgs.map((m) => m.info)));
  for (const m of answers) assert.deepEqual([m.info.providerID, m.info.modelID], ['agentpool', 'planner']);
  const kids = await getJSON(`/session/${sid}/children`);
  assert.equal(kids.length, 1);
  const kidMsgs = await getJSON(`/session/${kids[0].id}/message`);
  const kidAnswer = kidMsgs.find((m) => m.info.role === 'assistant');
  assert.equal(kidAnswer.info.modelID, 'quick', 'the child keeps its own model');

  // Without --model: the agent's own.
  since = rec.requests.length;
  const own = await run(opencodeBin, ['run', '--attach', url, 'Answer'], { env, cwd: workdir, timeout: 150000 });
  const ownOut = stripAnsi(own.stdout + '\n' + own.stderr);
  assert.equal(own.code, 0, where(ownOut));
  assert.match(ownOut, /Steady answer\./, where(ownOut));
  assert.match(ownOut, /> lead · steady/, where(ownOut));
});

test('opencode run --model with a model the server does not offer: the error is shown, nothing runs', async () => {
  const r = await run(opencodeBin, ['run', '--attach', url, '--model', 'openai/gpt-4o', 'Make a plan'], {
    env: clientEnv(),
    cwd: workdir,
    timeout: 150000,
  });
  const out = stripAnsi(r.stdout + '\n' + r.stderr);
  assert.notEqual(r.code, 0, out);
  assert.match(out, /model openai\/gpt-4o is not offered by this server/, out);
  const { sid, status } = lastPrompt();
  assert.equal(status, 400);
  const msgs = await getJSON(`/session/${sid}/message`);
  assert.equal(msgs.length, 0, 'no message stored for a refused prompt');
});

test('OpenCode TUI: /models picks another model; the next prompt runs on it', async () => {
  assert.ok(hasTmux(), 'tmux is needed to drive the TUI (make test-deps installs it)');
  const tui = new Tmux(`${opencodeBin} attach ${url}`, clientEnv(), workdir);
  try {
    // The TUI takes 10 to 100 s to start on a loaded 2-core machine.
    await tui.waitFor(/Ask anything/, 'the prompt', 150000);
    // Keys typed while the TUI still loads are lost: type until shown.
    const typeIn = async (text) => {
      for (let tries = 0; ; tries++) {
        tui.type(text);
        try {
          return await tui.waitFor(new RegExp(text), `the typed "${text}"`, 2000);
        } catch (e) {
          if (tries === 10) throw e;
          tui.keys('C-u');
        }
      }
    };
    await typeIn('/models');
    await tui.waitFor(/\/models\s{2,}\S/, '/models in the command list');
    tui.keys('Enter');
    // The model dialog lists the pool's models under the provider (the
    // prompt's footer names the current one, "Lead · steady", so a model's
    // name alone on the screen is no sign of the dialog). Its search field
    // takes keys only once the cursor is in it, a moment after it is drawn.
    await tui.waitFor(/Select model[\s\S]*\n\s*planner\s*\n\s*quick\s*\n.*steady/, 'the model list');
    await tui.waitForCursorOn('Search', 'the model search focused');
    tui.type('planner');
    // Filtered, the list is planner alone with its provider on its row
    // (the unfiltered list has a "planner" row too); Enter picks it.
    await tui.waitFor(/^\s*planner\s{2,}AgentPool/m, 'the list filtered to planner');
    tui.keys('Enter');
    // The dialog gone, the footer names the chosen model, and the prompt
    // takes keys again once the cursor is back in it.
    await tui.waitFor(/^(?![\s\S]*Select model)[\s\S]*Lead · planner/, 'planner chosen, the dialog closed');
    await tui.waitForCursorOn('Ask anything', 'the prompt focused');
    const before = rec.requests.length;
    await typeIn('Plan with the TUI');
    tui.keys('Enter');
    const screen = await tui.waitFor(/Planned with the helper's help\./, "the planner model's answer", 60000);
    assert.doesNotMatch(screen, /Steady answer|Failed to send prompt/);
    const posts = rec.requests.slice(before).filter((r) => r.method === 'POST' && /^\/session\/[^/?]+\/message/.test(r.path));
    assert.equal(posts.length, 1);
    assert.deepEqual(JSON.parse(posts[0].body).model, { providerID: 'agentpool', modelID: 'planner' });
    const sid = posts[0].path.split('/')[2];
    const msgs = await getJSON(`/session/${sid}/message`);
    assert.ok(msgs.filter((m) => m.info.role === 'assistant').every((m) => m.info.modelID === 'planner'));
  } finally {
    tui.kill();
  }
});
