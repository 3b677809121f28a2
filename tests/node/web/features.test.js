// The web view's trace and steering features, in Chromium (as
// web.test.js): the timeline's spans of model and tool calls, nested
// under their sessions; search and filter of the session tree; the diff
// panel of the files each session changed; per-node tokens and cost; and
// the rewind of a message's files and conversation with a confirm step,
// the files restored byte for byte.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../../..');
const bin = process.env.AGENTPOOL_BIN || path.join(repo, 'bin/agentpool');
const out = path.join(here, 'out');
const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';

const procs = [];
let profile;
let context;
let dir;
let delegURL;
let rewindURL;
// The file before the run: bytes no text round trip keeps (NUL, 0xff, CRLF).
const ORIGINAL = Buffer.from([0x6f, 0x6c, 0x64, 0x00, 0xff, 0x0d, 0x0a, 0x6e, 0x6f, 0x74, 0x65, 0x73, 0x0a]);

function serve(manifest, cwd, ...args) {
  const proc = spawn(bin, ['serve', 'web', '--addr', '127.0.0.1:0', '--db', path.join(cwd, 'sessions.db'), '-c', manifest, ...args], {
    stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, AGENTPOOL_SERVER_TOKEN: '' }, cwd,
  });
  const p = { proc, stderr: '' };
  procs.push(p);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${p.stderr}`)), 15000);
    proc.stderr.setEncoding('utf8');
    proc.stderr.on('data', (chunk) => {
      p.stderr += chunk;
      const m = p.stderr.match(/web listening on (http:\/\/127\.0\.0\.1:\d+)/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited with ${code}:\n${p.stderr}`)); });
  });
}

before(async () => {
  assert.ok(existsSync(bin), `AGENTPOOL_BIN ${bin} does not exist (run make build)`);
  assert.ok(existsSync(chromiumPath), `${chromiumPath} does not exist`);
  mkdirSync(out, { recursive: true });
  dir = mkdtempSync(path.join(os.tmpdir(), 'agentpool-web-features-'));
  mkdirSync(path.join(dir, 'deleg'));
  mkdirSync(path.join(dir, 'rewind'));
  copyFileSync(path.join(here, 'fixtures/rewind.yaml'), path.join(dir, 'rewind', 'rewind.yaml'));
  [delegURL, rewindURL] = await Promise.all([
    serve(path.join(here, 'fixtures/delegating.yaml'), path.join(dir, 'deleg')),
    serve(path.join(dir, 'rewind', 'rewind.yaml'), path.join(dir, 'rewind'), '--allow', 'Write'),
  ]);
  profile = mkdtempSync(path.join(os.tmpdir(), 'agentpool-web-chromium-'));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath, headless: true, viewport: { width: 1440, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  await context?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
  await Promise.all(procs.map(({ proc }) => {
    if (proc.exitCode !== null) return undefined;
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    proc.kill('SIGTERM');
    const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
    return exited.finally(() => clearTimeout(t));
  }));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function open(url) {
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('requestfailed', (r) => {
    if (new URL(r.url()).pathname === '/event' && /ABORTED/.test(r.failure()?.errorText || '')) return;
    problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`);
  });
  await page.goto(url);
  await page.locator('#conn[data-state="live"]').waitFor();
  await page.locator('#agent option[value="lead"]').waitFor({ state: 'attached' });
  return { page, problems };
}

const row = (page, agent) => page.locator(`.row:has(.agent:text-is("${agent}"))`);
const tlRow = async (page, agent) => page.locator(`.tl-row[data-id="${await row(page, agent).first().getAttribute('data-id')}"]`);
const shot = (page, name) => page.screenshot({ path: path.join(out, `${name}.png`) });

async function runFromBox(page, agent, text) {
  await page.selectOption('#agent', agent);
  await page.fill('#text', text);
  await page.click('#run');
}

// spans reads the spans drawn on a timeline row.
const spans = (loc) => loc.locator('.tl-span').evaluateAll((es) => es.map((e) => ({
  kind: e.dataset.kind, child: e.dataset.child || '', start: Number(e.dataset.start), end: Number(e.dataset.end), title: e.title })));

test('the timeline has a span per model and tool call, nested under the sessions; search and filter narrow the tree', async () => {
  const { page, problems } = await open(delegURL);
  await runFromBox(page, 'lead', 'Spans please');
  await page.locator('.row[data-depth="0"][data-status="done"]').waitFor({ timeout: 30000 });
  await page.locator('.part.text:has-text("Done: the squad researched")').waitFor();

  // The lead: two model calls and the task call between them, which
  // holds the squad's whole bar and leads to it.
  const lead = await spans(await tlRow(page, 'lead'));
  const model = lead.filter((s) => s.kind === 'model');
  const tools = lead.filter((s) => s.kind === 'tool');
  assert.equal(model.length, 2, JSON.stringify(lead));
  assert.equal(tools.length, 1, JSON.stringify(lead));
  const squadID = await row(page, 'squad').getAttribute('data-id');
  assert.equal(tools[0].child, squadID, 'the task span leads to the squad');
  assert.match(tools[0].title, /^task/);
  assert.ok(model[0].end <= tools[0].start + 5 && tools[0].end <= model[1].start + 5, `model, tool, model in order: ${JSON.stringify(lead)}`);
  // The researcher's worker call spans the checker's model call.
  const researcher = await spans(await tlRow(page, 'researcher'));
  const ask = researcher.find((s) => s.kind === 'tool');
  assert.match(ask.title, /Ask checker/, 'the worker call (shown as a task, as OpenCode clients link it)');
  assert.equal(ask.child, await row(page, 'checker').getAttribute('data-id'));
  const checker = (await spans(await tlRow(page, 'checker'))).filter((s) => s.kind === 'model');
  assert.equal(checker.length, 1);
  assert.ok(ask.start <= checker[0].start && checker[0].end <= ask.end, `the checker runs inside ask_checker: ${JSON.stringify([ask, checker])}`);
  for (const s of [...lead, ...researcher, ...checker]) assert.ok(s.end > s.start, `a span with a duration: ${JSON.stringify(s)}`);
  // Per node: the lead's own tokens (in and out) beside its subtree's;
  // a leaf's own.
  const usage = () => page.locator('.crumbs .usage').textContent();
  // Only the checker's model is priced (fixtures/delegating.yaml): the
  // lead's subtree costs what the checker's call cost, its own part
  // nothing.
  const ownAndSubtree = /^own [\d.]+k? tok \(\d+ in \/ \d+ out\) · subtree [\d.]+k? tok · \$\d+\.\d{2,4}$/;
  // The root's own totals come with its last session.updated, which can
  // reach the page after the spans above: wait for them, then check.
  await page.waitForFunction((re) => new RegExp(re).test(document.querySelector('.crumbs .usage')?.textContent ?? ''),
    ownAndSubtree.source, { timeout: 10000 }).catch(() => {});
  assert.match(await usage(), ownAndSubtree);
  await row(page, 'checker').click();
  await page.locator('.crumbs .path .here:text-is("checker")').waitFor();
  const checkerUsage = (await usage()).match(/^\d+ tok \((\d+) in \/ (\d+) out\) · \$(\d+\.\d{2,4})$/);
  assert.ok(checkerUsage, `the checker's tokens and cost: ${await usage()}`);
  // Its cost is its tokens at its price: $300 per million in, $1500 out,
  // shown as the page shows dollars (4 decimals under a cent).
  const [, tin, tout] = checkerUsage.map(Number);
  const want = (tin * 300 + tout * 1500) / 1e6;
  const dollars = `$${want < 0.01 ? want.toFixed(4) : want.toFixed(2)}`;
  assert.ok(want > 0);
  assert.equal(`$${checkerUsage[3]}`, dollars, `the checker's cost for ${tin} in / ${tout} out`);
  // The tree: the checker's row its cost; the lead's row its subtree's,
  // the same, and its own nothing.
  const cost = (agent) => row(page, agent).first().locator('.metrics .cost').textContent();
  assert.equal(await cost('checker'), dollars);
  assert.equal(await cost('lead'), `${dollars} (own $0)`);
  await row(page, 'lead').click();
  await page.locator('.crumbs .path .here:text-is("lead")').waitFor();
  // A click on the task span opens the squad.
  await (await tlRow(page, 'lead')).locator(`.tl-span[data-child="${squadID}"]`).click();
  await page.locator('.crumbs .path .here:text-is("squad")').waitFor();
  await shot(page, 'timeline-spans');

  // A failed run beside it, to filter.
  await runFromBox(page, 'broken', 'Fail for the filter');
  await row(page, 'broken').and(page.locator('[data-status="error"]')).waitFor({ timeout: 15000 });
  const agents = () => page.locator('#tree .row').evaluateAll((rs) => rs.map((r) => `${r.querySelector('.agent').textContent}${r.classList.contains('context') ? '*' : ''}`));
  assert.equal((await agents()).length, 6);
  await page.selectOption('#filter-status', 'error');
  await page.waitForFunction(() => document.querySelectorAll('#tree .row').length === 1);
  assert.deepEqual(await agents(), ['broken']);
  await page.selectOption('#filter-status', '');
  await page.selectOption('#filter-agent', 'checker');
  await page.waitForFunction(() => document.querySelectorAll('#tree .row').length === 4);
  assert.deepEqual(await agents(), ['lead*', 'squad*', 'researcher*', 'checker'], 'the checker with its ancestors');
  await page.selectOption('#filter-agent', '');
  // Text: the writer's words, found in its loaded transcript.
  await page.fill('#filter-text', 'browsed, replayed');
  await page.waitForFunction(() => document.querySelectorAll('#tree .row').length === 3);
  assert.deepEqual(await agents(), ['lead*', 'squad*', 'writer']);
  await page.fill('#filter-text', 'no such text anywhere');
  await page.locator('#tree p.empty:text-is("No session matches.")').waitFor();
  await page.fill('#filter-text', '');
  await page.waitForFunction(() => document.querySelectorAll('#tree .row').length === 6);
  await shot(page, 'filtered');
  assert.deepEqual(problems, []);
  await page.close();
});

test("the rewind of a message restores the files its child changed, byte for byte, after a confirm step", async () => {
  const notes = path.join(dir, 'rewind', 'notes.md');
  writeFileSync(notes, ORIGINAL);
  const { page, problems } = await open(rewindURL);
  await runFromBox(page, 'lead', 'Rewrite the notes');
  await page.locator('.row[data-depth="0"][data-status="done"]').waitFor({ timeout: 30000 });
  await page.locator('.part.text:has-text("Lead done")').waitFor();
  assert.equal(readFileSync(notes, 'utf8'), 'rewritten by the editor\n');

  // The diff panel of the root lists the file its child changed.
  await page.click('#diff-panel > summary');
  const file = page.locator('#diffs .diff-group:has(.diff-who a:text-is("@editor")) details.diff-file');
  await file.waitFor();
  assert.equal(await file.getAttribute('data-file'), notes);
  assert.match(await page.locator('#diff-count').textContent(), /^1 file$/);
  await file.locator('summary').click();
  await file.locator('.d-add:has-text("+rewritten by the editor")').waitFor();
  await shot(page, 'diff-panel');

  // Cancel changes nothing.
  const first = page.locator('#transcript .msg.assistant').first();
  await first.hover();
  await first.locator('button.rewind').click();
  await page.locator('#rewind-dialog[open]').waitFor();
  await page.click('#rewind-cancel');
  assert.equal(await page.locator('#rewind-dialog[open]').count(), 0);
  assert.equal(readFileSync(notes, 'utf8'), 'rewritten by the editor\n');

  // Code: the lead's first answer (the task call) back: the editor's
  // Write undone; the conversation stays.
  const before = await page.locator('#transcript .msg').count();
  await first.hover();
  await first.locator('button.rewind').click();
  await page.check('#rewind-dialog input[value="code"]');
  await shot(page, 'rewind-confirm');
  await page.click('#rewind-confirm');
  await page.locator('.toast.note:text-is("Files rewound.")').waitFor();
  assert.deepEqual(readFileSync(notes), ORIGINAL, 'restored byte for byte');
  await page.locator('.part.text:has-text("Lead done")').waitFor();
  assert.equal(await page.locator('#transcript .msg').count(), before, 'the conversation stays');

  // Conversation: from the lead's first answer on, the messages go.
  const again = page.locator('#transcript .msg.assistant').first();
  await again.hover();
  await again.locator('button.rewind').click();
  await page.check('#rewind-dialog input[value="conversation"]');
  await page.click('#rewind-confirm');
  await page.locator('.toast.note:text-is("Conversation rewound.")').waitFor();
  await page.waitForFunction(() => document.querySelectorAll('#transcript .msg.assistant').length === 0);
  assert.equal(await page.locator('#transcript .msg.user').count(), 1, 'the prompt stays');
  assert.deepEqual(readFileSync(notes), ORIGINAL);
  await shot(page, 'rewound');
  assert.deepEqual(problems, []);
  await page.close();
});
