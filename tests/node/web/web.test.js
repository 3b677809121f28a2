// Drives `agentpool serve web` in Debian's headless Chromium (through
// playwright-core, pinned in package-lock.json): the page loads with no
// network but the server, a delegating run started from the prompt box
// shows its child sessions live and nested in the tree and the timeline,
// a child opens from the transcript and leads back to its parent, the
// stop button aborts a run, and with a token the page asks for it.
// Screenshots are written to out/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
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
const TOKEN = 'web-test-token-5f1c0e';

const servers = [];
let profile;
let context;
let baseURL;
let tokenURL;

// start runs the binary on a free loopback port and resolves its base URL
// from the "web listening on" line on stderr.
function start(...args) {
  const proc = spawn(bin, ['serve', 'web', '--addr', '127.0.0.1:0', '--db', ':memory:', '-c', manifest, ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, AGENTPOOL_SERVER_TOKEN: '' },
  });
  const server = { proc, stderr: '' };
  servers.push(server);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${server.stderr}`)), 15000);
    proc.stderr.setEncoding('utf8');
    proc.stderr.on('data', (chunk) => {
      server.stderr += chunk;
      const m = server.stderr.match(/web listening on (http:\/\/127\.0\.0\.1:\d+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${server.stderr}`));
    });
  });
}

before(async () => {
  assert.ok(existsSync(bin), `AGENTPOOL_BIN ${bin} does not exist (run make build)`);
  assert.ok(existsSync(chromiumPath), `${chromiumPath} does not exist (apt-get install chromium; make test-deps does)`);
  mkdirSync(out, { recursive: true });
  [baseURL, tokenURL] = await Promise.all([start(), start('--token', TOKEN)]);
  profile = mkdtempSync(path.join(os.tmpdir(), 'agentpool-web-chromium-'));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    viewport: { width: 1440, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  await context?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
  await Promise.all(
    servers.map(({ proc }) => {
      if (proc.exitCode !== null) return undefined;
      const exited = new Promise((resolve) => proc.once('exit', resolve));
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
      return exited.finally(() => clearTimeout(t));
    }),
  );
});

// open loads the page in a new tab and collects its errors: a script
// error, a refused resource (CSP) or a failed request fails the test.
async function open(url) {
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('requestfailed', (r) => {
    // The event stream is cut when the page reloads or closes.
    if (new URL(r.url()).pathname === '/event' && /ABORTED/.test(r.failure()?.errorText || '')) return;
    problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`);
  });
  page.on('request', (r) => { if (!r.url().startsWith(url)) problems.push(`request off the server: ${r.url()}`); });
  await page.goto(url);
  return { page, problems };
}

const row = (page, agent) => page.locator(`.row:has(.agent:text-is("${agent}"))`);
const shot = (page, name) => page.screenshot({ path: path.join(out, `${name}.png`) });

test('a delegating run shows live in the tree, the timeline and the transcript', async () => {
  const { page, problems } = await open(baseURL);
  await page.locator('#conn[data-state="live"]').waitFor();
  const agents = await page.locator('#agent option').allTextContents();
  assert.ok(agents.includes('lead') && agents.includes('squad') && agents.includes('marathon'), `agents: ${agents}`);
  assert.deepEqual(await page.locator('#agent optgroup').evaluateAll((gs) => gs.map((g) => g.label)), ['Agents', 'Teams']);

  await page.selectOption('#agent', 'lead');
  await page.fill('#text', 'Write a short note about nested teams');
  await page.click('#run');

  // Live: the children appear nested while the root still runs.
  await row(page, 'checker').waitFor({ timeout: 15000 });
  assert.equal(await row(page, 'lead').getAttribute('data-status'), 'running', 'the root runs while its children appear');
  const tree = await page.locator('.row').evaluateAll((rs) => rs.map((r) => [r.querySelector('.agent').textContent, r.dataset.depth]));
  const depth = Object.fromEntries(tree);
  assert.deepEqual([depth.lead, depth.squad, depth.researcher, depth.writer, depth.checker], ['0', '1', '2', '2', '3'], JSON.stringify(tree));
  const order = tree.map(([a]) => a);
  assert.ok(order.indexOf('checker') === order.indexOf('researcher') + 1, `checker right under researcher: ${order}`);
  assert.equal(await row(page, 'squad').locator('.badge').textContent(), 'task');
  assert.equal(await row(page, 'checker').locator('.badge').textContent(), 'worker');
  assert.ok(await page.locator('.tl-bar.running').count() >= 1, 'running bars in the timeline');
  await shot(page, 'live');

  // Finished: every session done, the timeline has a bar per session.
  await page.locator('.row[data-depth="0"][data-status="done"]').waitFor({ timeout: 20000 });
  await page.locator('.part.text:has-text("Done: the squad researched")').waitFor();
  assert.deepEqual(await page.locator('.row').evaluateAll((rs) => rs.map((r) => r.dataset.status)), ['done', 'done', 'done', 'done', 'done']);
  assert.equal(await page.locator('.tl-row').count(), 5);
  assert.equal(await page.locator('.tl-bar.crit').count(), 4, 'critical path: lead, squad, researcher, checker');
  assert.match(await row(page, 'lead').locator('.tok').textContent(), /\d+ tok/);
  assert.ok(await page.locator('.reasoning summary').textContent(), 'reasoning shown');
  assert.equal(await page.locator('details.reasoning[open]').count(), 0, 'reasoning starts collapsed');
  await shot(page, 'finished');

  // Into the child from the delegation link, one level deeper, and back.
  const rootHash = await page.evaluate(() => location.hash);
  await page.click('.delegation:has-text("@squad") .child-link');
  await page.locator('.crumbs .path .here:text-is("squad")').waitFor();
  await page.locator('.delegation:has-text("@researcher")').waitFor();
  await page.click('.delegation:has-text("@researcher") .child-link');
  await page.locator('.crumbs .path .here:text-is("researcher")').waitFor();
  await page.locator('.part.text:has-text("Finding (checked)")').waitFor();
  await page.locator('.delegation:has-text("@checker") .tool > summary').click();
  await page.locator('.delegation:has-text("@checker") .tool-body pre:has-text("Checked: **correct**.")').waitFor();
  assert.ok(await row(page, 'researcher').evaluate((r) => r.classList.contains('selected')), 'the tree follows the selection');
  await shot(page, 'child');

  // The checker's answer: its Markdown formatted, its markup only text.
  await page.click('.row:has(.agent:text-is("checker"))');
  await page.locator('.part.text strong:text-is("correct")').waitFor();
  assert.equal(await page.locator('.part.text code').textContent(), 'sequential');
  assert.match(await page.locator('.part.text').last().textContent(), /<img src=x onerror=/);
  assert.equal(await page.locator('#transcript img').count(), 0, 'a model\'s markup is never parsed');
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  await shot(page, 'markdown');
  await page.goBack();
  await page.locator('.crumbs .path .here:text-is("researcher")').waitFor();
  await page.click('.crumbs .back');
  await page.locator('.crumbs .path .here:text-is("squad")').waitFor();
  await page.click('.crumbs .back');
  await page.locator('.crumbs .path .here:text-is("lead")').waitFor();
  assert.equal(await page.evaluate(() => location.hash), rootHash);
  assert.equal(await page.locator('.crumbs .back').count(), 0, 'a root has no parent link');

  // A reload rebuilds the same tree from the API alone.
  await page.reload();
  await page.locator('.part.text:has-text("Done: the squad researched")').waitFor();
  assert.equal(await page.locator('.row').count(), 5);
  assert.equal(await page.locator('.tl-row').count(), 5);
  assert.deepEqual(problems, []);
  await page.close();
});

test('the stop button aborts a run and its children', async () => {
  const { page, problems } = await open(baseURL);
  await page.locator('#conn[data-state="live"]').waitFor();
  await page.selectOption('#agent', 'marathon');
  await page.fill('#text', 'Take your time');
  await page.click('#run');
  await row(page, 'slow').waitFor({ timeout: 15000 });
  assert.equal(await row(page, 'slow').getAttribute('data-status'), 'running');
  // The child's text streams in its transcript; stopping from a child
  // stops its whole run.
  await page.click('.row:has(.agent:text-is("slow"))');
  const streaming = page.locator('.part.text.streaming');
  await streaming.waitFor({ timeout: 10000 });
  const before = (await streaming.textContent()).length;
  await page.waitForFunction((n) => document.querySelector('.part.text.streaming')?.textContent.length > n, before);
  assert.equal(await page.isEnabled('#stop'), true);
  await page.click('#stop');
  await page.locator('.row[data-depth="0"][data-status="aborted"]:has(.agent:text-is("marathon"))').waitFor({ timeout: 15000 });
  await row(page, 'slow').and(page.locator('[data-status="aborted"]')).waitFor();
  assert.equal(await page.isEnabled('#stop'), false);
  await page.locator('.tl-bar.aborted').first().waitFor();
  await shot(page, 'aborted');
  assert.deepEqual(problems, []);
  await page.close();
});

test('with a token the page asks for it and sends it on every call', async () => {
  // The page itself loads without the token; the API does not answer without it.
  const res = await fetch(`${tokenURL}/session`);
  assert.equal(res.status, 401);
  const pageRes = await fetch(`${tokenURL}/`);
  assert.equal(pageRes.status, 200);
  assert.match(pageRes.headers.get('content-security-policy'), /default-src 'self'/);

  const page = await context.newPage();
  await page.goto(tokenURL);
  await page.locator('#token-dialog[open]').waitFor();
  await page.fill('#token', 'not-the-token');
  await page.click('#token-form button[type="submit"]');
  await page.locator('#token-dialog[open] #token-error:text("refused")').waitFor();
  await page.fill('#token', TOKEN);
  await page.click('#token-form button[type="submit"]');
  await page.locator('#conn[data-state="live"]').waitFor();
  await page.selectOption('#agent', 'lead');
  await page.fill('#text', 'With a token');
  await page.click('#run');
  await row(page, 'checker').waitFor({ timeout: 15000 });
  await page.locator('.row[data-depth="0"][data-status="done"]').waitFor({ timeout: 20000 });
  await shot(page, 'token');
  await page.close();
});
