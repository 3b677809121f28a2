// The web view reads the stored truth and follows other processes: runs
// that ended (aborted, failed, done) read back by a new `serve web` on the
// same SQLite file show how they ended, with their errors, titles, real
// reasoning times and stored durations; a run made by `agentpool run` in
// another process on that file shows live on a page opened while it runs,
// then done. Chromium through playwright-core, as web.test.js.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../../..');
const bin = process.env.AGENTPOOL_BIN || path.join(repo, 'bin/agentpool');
const manifest = path.join(here, 'fixtures/delegating.yaml');
const out = path.join(here, 'out');
const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';

const procs = [];
let profile;
let context;
let dir;

// serve starts `serve web` on db and resolves its base URL.
function serve(db) {
  const proc = spawn(bin, ['serve', 'web', '--addr', '127.0.0.1:0', '--db', db, '-c', manifest], {
    stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, AGENTPOOL_SERVER_TOKEN: '' }, cwd: dir,
  });
  const p = { proc, stderr: '' };
  procs.push(p);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${p.stderr}`)), 15000);
    proc.stderr.setEncoding('utf8');
    proc.stderr.on('data', (chunk) => {
      p.stderr += chunk;
      const m = p.stderr.match(/web listening on (http:\/\/127\.0\.0\.1:\d+)/);
      if (m) { clearTimeout(timer); resolve({ url: m[1], p }); }
    });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited with ${code}:\n${p.stderr}`)); });
  });
}

async function stop(p) {
  if (p.proc.exitCode !== null) return;
  const exited = new Promise((resolve) => p.proc.once('exit', resolve));
  p.proc.kill('SIGTERM');
  const t = setTimeout(() => p.proc.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(t);
}

before(async () => {
  assert.ok(existsSync(bin), `AGENTPOOL_BIN ${bin} does not exist (run make build)`);
  assert.ok(existsSync(chromiumPath), `${chromiumPath} does not exist`);
  mkdirSync(out, { recursive: true });
  dir = mkdtempSync(path.join(os.tmpdir(), 'agentpool-web-stored-'));
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
  await Promise.all(procs.map(stop));
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
  await page.locator('#agent option[value="marathon"]').waitFor({ state: 'attached' });
  return { page, problems };
}

const row = (page, agent) => page.locator(`.row:has(.agent:text-is("${agent}"))`);
const shot = (page, name) => page.screenshot({ path: path.join(out, `${name}.png`) });

// fmtDuration is the page's (format.js).
function fmtDuration(ms) {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)}s`;
  const m = Math.floor(s / 60);
  return `${m}m ${Math.round(s % 60)}s`;
}

async function runFromBox(page, agent, text) {
  await page.selectOption('#agent', agent);
  await page.fill('#text', text);
  await page.click('#run');
}

test('aborted, failed and done runs read back after a restart show how they ended', async () => {
  const db = path.join(dir, 'restart.db');
  const first = await serve(db);
  const a = await open(first.url);
  // Aborted: the stop button while the slow child streams.
  await runFromBox(a.page, 'marathon', 'Abort me');
  await row(a.page, 'slow').and(a.page.locator('[data-status="running"]')).waitFor({ timeout: 15000 });
  await a.page.click('.row:has(.agent:text-is("slow"))');
  await a.page.locator('.part.text.streaming').waitFor({ timeout: 10000 });
  await a.page.click('#stop');
  await row(a.page, 'marathon').and(a.page.locator('[data-status="aborted"]')).waitFor({ timeout: 15000 });
  // Failed: the model errors.
  await runFromBox(a.page, 'broken', 'Fail');
  await row(a.page, 'broken').and(a.page.locator('[data-status="error"]')).waitFor({ timeout: 15000 });
  // Done, with reasoning.
  await runFromBox(a.page, 'lead', 'Think first');
  await row(a.page, 'lead').and(a.page.locator('[data-status="done"]')).waitFor({ timeout: 30000 });
  assert.deepEqual(a.problems, []);
  await a.page.close();
  await stop(first.p);

  const second = await serve(db);
  const { page, problems } = await open(second.url);
  await row(page, 'marathon').and(page.locator('[data-status="aborted"]')).waitFor({ timeout: 10000 });
  await row(page, 'slow').and(page.locator('[data-status="aborted"]')).waitFor();
  await row(page, 'broken').and(page.locator('[data-status="error"]')).waitFor();
  await row(page, 'lead').and(page.locator('[data-status="done"]')).waitFor();
  assert.equal(await page.locator('.row[data-status="running"]').count(), 0, 'nothing runs after the restart');

  // The failed run says why.
  await row(page, 'broken').click();
  await page.locator('.crumbs .stat-error:has-text("upstream failed")').waitFor();
  assert.match(await page.locator('.crumbs .stat').textContent(), /failed/);

  // The aborted root: its delegation card names the child and its title,
  // aborted (not a bare red ✗).
  await row(page, 'marathon').click();
  const card = page.locator('.delegation:has-text("@slow")');
  await card.waitFor();
  assert.equal(await card.locator('.deleg-head .tool-title').textContent(), 'Long job');
  assert.equal(await card.locator('.deleg-head .st').getAttribute('title'), 'aborted');
  assert.match(await page.locator('.crumbs .stat').textContent(), /aborted/);

  // The done run: its reasoning has its real time, and the root's
  // duration is the stored one.
  await row(page, 'lead').click();
  const summary = page.locator('details.reasoning summary').first();
  await summary.waitFor();
  const thought = await summary.textContent();
  assert.match(thought, /^Thought for \d/, thought);
  assert.notEqual(thought, 'Thought for 0ms');
  for (const agent of ['lead', 'marathon']) {
    const id = await row(page, agent).getAttribute('data-id');
    const info = await (await fetch(`${second.url}/session/${id}`)).json();
    const d = info.metadata?.agentpool?.durationMs;
    assert.ok(d > 0, `${agent}: stored duration ${JSON.stringify(info.metadata)}`);
    assert.equal(await row(page, agent).locator('.dur').textContent(), fmtDuration(d), `${agent}: the stored duration`);
  }
  await shot(page, 'stored-after-restart');
  assert.deepEqual(problems, []);
  await page.close();
});

test("a run of another process on the same database shows live, then done", async () => {
  const db = path.join(dir, 'shared.db');
  const srv = await serve(db);
  const { page, problems } = await open(srv.url);
  const run = spawn(bin, ['run', '--db', db, '-c', manifest, '--agent', 'relay', 'From another process'], {
    stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, AGENTPOOL_SERVER_TOKEN: '' }, cwd: dir,
  });
  procs.push({ proc: run });
  let runErr = '';
  run.stderr.setEncoding('utf8');
  run.stderr.on('data', (c) => { runErr += c; });
  const exited = new Promise((resolve) => run.once('exit', resolve));

  const running = (agent) => page.locator(`.row[data-status="running"]:has(.agent:text-is("${agent}"))`);
  await running('crawl').waitFor({ timeout: 30000 });
  const rootID = await running('relay').getAttribute('data-id');
  const status = await (await fetch(`${srv.url}/session/status`)).json();
  assert.equal(status[rootID]?.type, 'busy', `GET /session/status lists the other process's run: ${JSON.stringify(status)}`);
  // Its child's transcript, live: its text, its Bash call running.
  await running('crawl').click();
  await page.locator('.part.text:has-text("Waiting for the go.")').waitFor({ timeout: 15000 });
  await page.locator('.tool-wrap:has(.tool-name:text-is("bash")) .tool-status:text-is("running")').waitFor({ timeout: 15000 });
  // A second page opened while it runs sees it running too.
  const b = await open(srv.url);
  await b.page.locator(`.row[data-id="${rootID}"][data-status="running"]`).waitFor({ timeout: 15000 });
  await shot(page, 'cross-process-live');

  // The go: the other process's run goes on; both pages follow it live.
  writeFileSync(path.join(dir, 'go'), '');
  await page.locator('.part.text:has-text("Crawled after the go.")').waitFor({ timeout: 30000 });
  assert.equal(await exited, 0, runErr);
  for (const p of [page, b.page]) {
    await p.locator(`.row[data-id="${rootID}"][data-status="done"]`).waitFor({ timeout: 30000 });
    await row(p, 'crawl').and(p.locator('[data-status="done"]')).waitFor();
  }
  assert.deepEqual(await (await fetch(`${srv.url}/session/status`)).json(), {});
  await page.locator(`.row[data-id="${rootID}"]`).click();
  await page.locator('.part.text:has-text("Relayed.")').waitFor({ timeout: 15000 });
  await shot(page, 'cross-process-done');
  assert.deepEqual(problems, []);
  assert.deepEqual(b.problems, []);
  await page.close();
  await b.page.close();
});
