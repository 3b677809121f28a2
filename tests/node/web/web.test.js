// Drives `agentpool serve web` in Debian's headless Chromium (through
// playwright-core, pinned in package-lock.json): the page loads with no
// network but the server, a delegating run started from the prompt box
// shows its child sessions live and nested in the tree and the timeline,
// a child opens from the transcript and leads back to its parent, the
// stop button aborts a run, a row's cancel button ends one child while
// its run goes on, the follow-up box messages a running child, with a token the page asks for it, and a
// grandchild's Write waits for an answer given in the page (or elsewhere),
// also across a SIGKILL of the server.
// Screenshots are written to out/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
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
let approvalURL;
let workdir; // the approval server's workspace

// start runs the binary on a free loopback port and resolves its base URL
// from the "web listening on" line on stderr.
function start(...args) {
  return startWith(manifest, undefined, ...args);
}

// startWith is start on another manifest, in directory cwd.
function startWith(file, cwd, ...args) {
  const proc = spawn(bin, ['serve', 'web', '--addr', '127.0.0.1:0', '--db', ':memory:', '-c', file, ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, AGENTPOOL_SERVER_TOKEN: '' },
    cwd,
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

// isolatedManifest copies fixtures/approval.yaml into dir: an "always"
// answer is saved to .claude/settings.local.json beside the manifest, and
// must not reach the checkout (nor the next run's asks).
function isolatedManifest(dir) {
  const file = path.join(dir, 'approval.yaml');
  copyFileSync(path.join(here, 'fixtures/approval.yaml'), file);
  return file;
}

before(async () => {
  assert.ok(existsSync(bin), `AGENTPOOL_BIN ${bin} does not exist (run make build)`);
  assert.ok(existsSync(chromiumPath), `${chromiumPath} does not exist (apt-get install chromium; make test-deps does)`);
  mkdirSync(out, { recursive: true });
  workdir = mkdtempSync(path.join(os.tmpdir(), 'agentpool-web-approvals-'));
  [baseURL, tokenURL, approvalURL] = await Promise.all([start(), start('--token', TOKEN),
    startWith(isolatedManifest(workdir), workdir)]);
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
  if (workdir) rmSync(workdir, { recursive: true, force: true });
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
  // The list of agents comes from its own request, which may answer after
  // the stream is live: wait for it, not for the stream.
  await page.locator('#agent option[value="marathon"]').waitFor({ state: 'attached' });
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
  assert.match(await row(page, 'lead').locator('.tok').textContent(), /^[\d.]+k? tok \(own [\d.]+k?\)$/, 'subtree and own tokens');
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

test("a running row's cancel button ends that child alone; its run goes on", async () => {
  const { page, problems } = await open(baseURL);
  await page.locator('#conn[data-state="live"]').waitFor();
  await page.selectOption('#agent', 'marathon');
  await page.fill('#text', 'Cancel the slow part');
  await page.click('#run');
  // The previous test's run has rows of the same agents: this run's are
  // the running ones.
  const running = (agent) => page.locator(`.row[data-status="running"]:has(.agent:text-is("${agent}"))`);
  await running('slow').waitFor({ timeout: 15000 });
  const slowID = await running('slow').getAttribute('data-id');
  const rootID = await running('marathon').getAttribute('data-id');
  const slow = page.locator(`.row[data-id="${slowID}"]`);
  const root = page.locator(`.row[data-id="${rootID}"]`);
  const cancel = slow.locator('button.cancel');
  await cancel.waitFor();
  assert.match(await cancel.getAttribute('title'), /parent goes on/);
  await shot(page, 'cancel-button');
  await cancel.click();
  // The child ends aborted, the root finishes with its answer.
  await slow.and(page.locator('[data-status="aborted"]')).waitFor({ timeout: 15000 });
  await root.and(page.locator('[data-status="done"]')).waitFor({ timeout: 15000 });
  assert.equal(await cancel.isHidden(), true, 'no cancel button on an ended session');
  assert.equal(await root.locator('button.cancel').isHidden(), true);
  await root.click();
  await page.locator('.part.text:has-text("Done.")').waitFor();
  await page.locator('.delegation:has-text("@slow") .tool > summary').first().click();
  await page.locator('.delegation:has-text("@slow") pre.error-text:has-text("cancelled by the user (from web)")').first().waitFor();
  await shot(page, 'cancelled-child');
  assert.deepEqual(problems, []);
  await page.close();
});

test("the follow-up box messages a running child, which answers at its next turn", async () => {
  const { page, problems } = await open(baseURL);
  await page.locator('#conn[data-state="live"]').waitFor();
  assert.equal(await page.isHidden('#followup'), true, 'no follow-up box without a selected session');
  await page.selectOption('#agent', 'marathon');
  await page.fill('#text', 'Message the slow part');
  await page.click('#run');
  const running = (agent) => page.locator(`.row[data-status="running"]:has(.agent:text-is("${agent}"))`);
  await running('slow').waitFor({ timeout: 15000 });
  const slowID = await running('slow').getAttribute('data-id');
  const rootID = await running('marathon').getAttribute('data-id');
  await page.click(`.row[data-id="${slowID}"]`);
  await page.locator('.part.text.streaming').waitFor({ timeout: 10000 });
  assert.match(await page.getAttribute('#followup-text', 'placeholder'), /next turn/);
  await page.fill('#followup-text', 'Please count backwards too.');
  await page.click('#followup-send');
  // The message shows as a user message of the child, then its answer.
  await page.locator('.msg.user:has-text("Please count backwards too.")').waitFor({ timeout: 30000 });
  await page.locator('.part.text:has-text("Noted: counting backwards too.")').waitFor({ timeout: 30000 });
  await page.locator(`.row[data-id="${slowID}"][data-status="done"]`).waitFor({ timeout: 15000 });
  await page.locator(`.row[data-id="${rootID}"][data-status="done"]`).waitFor({ timeout: 15000 });
  assert.equal(await page.inputValue('#followup-text'), '');
  await shot(page, 'followup');
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

// --- approvals ----------------------------------------------------------
//
// fixtures/approval.yaml: lead --task--> desk (team) --member--> writer,
// whose Write of notes.md asks (Write's rule is "ask" by default). The
// writer is a grandchild of the run: the server publishes its request on
// desk (the root's child) with metadata.sessionID naming the writer.

const NOTE = '# Notes\n\n<b>teams</b> nest & the web view asks first\n';
const notes = () => path.join(workdir, 'notes.md');
const waitingRow = (page) => page.locator('.row[data-waiting="true"]');
// The newest run's rows come first (roots newest first).
const newest = (page, agent) => row(page, agent).first();

// pending lists the approval server's pending requests.
async function pending() {
  const r = await fetch(`${approvalURL}/permission`);
  assert.equal(r.status, 200);
  return r.json();
}

// startRun starts the approval fixture's run from the page's prompt box
// and waits until its grandchild's row is marked waiting.
async function startRun(page, text) {
  await page.selectOption('#agent', 'lead');
  await page.fill('#text', text);
  await page.click('#run');
  await newest(page, 'writer').and(waitingRow(page)).waitFor({ timeout: 15000 });
}

const runDone = (page) => page.locator('.row[data-depth="0"]').first().and(page.locator('[data-status="done"]'))
  .waitFor({ timeout: 20000 });

test("a grandchild's Write waits in the tree and the transcript; Allow once lets it write", async () => {
  rmSync(notes(), { force: true });
  const { page, problems } = await open(approvalURL);
  await page.locator('#conn[data-state="live"]').waitFor();
  await startRun(page, 'Write the note');

  // The tree marks the session where the tool runs, not the session the
  // request is published on.
  const marks = await page.locator('.row').evaluateAll((rs) => rs.map((r) => [
    r.querySelector('.agent').textContent, r.dataset.depth, r.dataset.waiting, r.querySelector('.wait').textContent]));
  assert.deepEqual(marks, [['lead', '0', 'false', ''], ['desk', '1', 'false', ''], ['writer', '2', 'true', 'waiting for approval']]);
  const [req] = await pending();
  assert.notEqual(req.metadata.sessionID, req.sessionID, 'published on desk, naming the writer');
  assert.match(await page.title(), /^\(1\) agentpool/);

  // The card: agent, tool, title, file and diff, all as text.
  await newest(page, 'writer').click();
  const card = page.locator('.approval[data-state="pending"]');
  await card.waitFor();
  assert.equal(await card.locator('.ap-agent').textContent(), '@writer');
  assert.equal(await card.locator('.ap-tool').textContent(), 'write');
  assert.equal(await card.locator('.ap-title').textContent(), 'Write notes.md');
  assert.equal(await card.locator('.ap-file').textContent(), notes());
  const added = await card.locator('.ap-diff .d-add').allTextContents();
  assert.deepEqual(added, ['+# Notes\n', '+\n', '+<b>teams</b> nest & the web view asks first\n']);
  assert.equal(await card.locator('.ap-diff b').count(), 0, 'the diff is never parsed as HTML');
  assert.ok(await page.locator('.part.tool-wrap:has(.tool-name:text-is("write")) .approval').count(), 'the card sits on its tool call');
  assert.equal(existsSync(notes()), false, 'written before the answer');
  await shot(page, 'approval-pending');

  await card.locator('button.ap-once').click();
  await page.locator('.approval[data-state="once"] .ap-result:text-is("Allowed once here")').waitFor();
  await runDone(page);
  assert.equal(await waitingRow(page).count(), 0, 'the waiting mark goes');
  assert.equal(readFileSync(notes(), 'utf8'), NOTE);
  await page.locator('.part.text:has-text("Created")').waitFor();
  assert.deepEqual(await pending(), []);
  assert.equal(await page.title(), 'agentpool');
  await shot(page, 'approval-allowed');
  assert.deepEqual(problems, []);
  await page.close();
});

test('Reject with a message reaches the grandchild; the run goes on', async () => {
  rmSync(notes(), { force: true });
  const { page, problems } = await open(approvalURL);
  await page.locator('#conn[data-state="live"]').waitFor();
  await startRun(page, 'Write it again');

  // From the root's transcript down to the waiting session.
  await newest(page, 'lead').click();
  await page.locator('.delegation:has-text("@desk") a.waiting:text-is("waiting for approval")').click();
  await page.locator('.crumbs .path .here:text-is("desk")').waitFor();
  await page.locator('.delegation:has-text("@writer") a.waiting').click();
  await page.locator('.crumbs .path .here:text-is("writer")').waitFor();

  const card = page.locator('.approval[data-state="pending"]');
  await card.locator('.ap-message').fill('use notes.txt instead');
  await card.locator('button.ap-reject').click();
  await page.locator('.approval[data-state="reject"] .ap-result:text-is("Rejected here: use notes.txt instead")').waitFor();
  await runDone(page);
  assert.equal(existsSync(notes()), false, 'the rejected Write happened');
  // The model saw the rejection with the user's words, and answered.
  await page.locator('.part.text:has-text("approval rejected")').waitFor();
  assert.match(await page.locator('.part.text').last().textContent(), /rejected by the user in web: use notes\.txt instead/);
  assert.equal(await waitingRow(page).count(), 0);
  await shot(page, 'approval-rejected');
  assert.deepEqual(problems, []);
  await page.close();
});

test('a request pending before the page loads shows; an answer given elsewhere settles every page', async () => {
  rmSync(notes(), { force: true });
  const a = await open(approvalURL);
  await a.page.locator('#conn[data-state="live"]').waitFor();
  await startRun(a.page, 'Answered elsewhere');
  await newest(a.page, 'writer').click();
  await a.page.locator('.approval[data-state="pending"]').waitFor();

  // A page opened now learns of the request from GET /permission.
  const b = await open(approvalURL);
  await newest(b.page, 'writer').and(waitingRow(b.page)).waitFor();
  await newest(b.page, 'writer').click();
  await b.page.locator('.approval[data-state="pending"]').waitFor();

  // Answered by another client (as the OpenCode TUI does) while page b's
  // Reject is on its way: the first answer wins, both cards follow
  // permission.replied, and page b says its answer was not taken.
  const [req] = await pending();
  await b.page.route('**/permission/*/reply', async (route) => {
    const r = await fetch(`${approvalURL}/permission/${req.id}/reply`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ reply: 'once' }),
    });
    assert.equal(r.status, 200);
    await route.continue();
  });
  await b.page.locator('.approval[data-state="pending"] button.ap-reject').click();
  await b.page.locator('.approval[data-state="once"] .ap-result.error-text:has-text("Allowed once elsewhere. The answer was not taken")')
    .waitFor();
  assert.match(await b.page.locator('.approval .ap-result').textContent(), /no longer pending/);
  await b.page.unroute('**/permission/*/reply');
  await a.page.locator('.approval[data-state="once"] .ap-result:text-is("Allowed once elsewhere")').waitFor();
  for (const { page } of [a, b]) {
    await runDone(page);
    assert.equal(await waitingRow(page).count(), 0);
    assert.equal(await page.locator('.approval .ap-actions:visible').count(), 0, 'no buttons on a settled card');
  }
  assert.equal(readFileSync(notes(), 'utf8'), NOTE);

  // Allow always from one page: the other sees it; the next Write of the
  // writer no longer asks.
  rmSync(notes());
  await startRun(a.page, 'Always');
  await newest(a.page, 'writer').click();
  await newest(b.page, 'writer').and(waitingRow(b.page)).waitFor();
  await newest(b.page, 'writer').click();
  await b.page.locator('.approval[data-state="pending"] button.ap-always').click();
  await b.page.locator('.approval[data-state="always"] .ap-result:text-is("Allowed always here")').waitFor();
  await a.page.locator('.approval[data-state="always"] .ap-result:text-is("Allowed always elsewhere")').waitFor();
  await runDone(a.page);
  assert.equal(readFileSync(notes(), 'utf8'), NOTE);

  rmSync(notes());
  await a.page.selectOption('#agent', 'lead');
  await a.page.fill('#text', 'No question now');
  await a.page.click('#run');
  await a.page.locator('.part.text:has-text("Lead done")').waitFor({ timeout: 20000 });
  assert.equal(readFileSync(notes(), 'utf8'), NOTE, 'written under the "always" rule');
  assert.equal(await a.page.locator('.approval[data-state="pending"]').count(), 0);
  await shot(a.page, 'approval-elsewhere');
  assert.deepEqual(a.problems, []);
  // The browser logs the refused (404) answer of page b; nothing else.
  assert.deepEqual(b.problems, ['console: Failed to load resource: the server responded with a status of 404 (Not Found)']);
  await a.page.close();
  await b.page.close();
});

// A run that waits when its server dies goes on in the next server over
// the same database (docs/approvals.md, "Durable"): the page of the new
// server shows the same request waiting, and Allow once finishes the run.
test('a run waiting when its server is killed waits again in a new server; Allow once finishes it', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agentpool-web-restart-'));
  const file = isolatedManifest(dir);
  const db = path.join(dir, 'sessions.db');
  const note = path.join(dir, 'notes.md');
  try {
    const firstURL = await startWith(file, dir, '--db', db);
    const first = servers[servers.length - 1];
    const a = await open(firstURL);
    await a.page.locator('#conn[data-state="live"]').waitFor();
    await startRun(a.page, 'Write it across a restart');
    const [asked] = await (await fetch(`${firstURL}/permission`)).json();
    assert.ok(asked?.id, 'the first server has the request');
    await a.page.close();
    const exited = new Promise((resolve) => first.proc.once('exit', resolve));
    first.proc.kill('SIGKILL');
    await exited;
    assert.equal(existsSync(note), false, 'written before any answer');

    const secondURL = await startWith(file, dir, '--db', db);
    const { page, problems } = await open(secondURL);
    await page.locator('#conn[data-state="live"]').waitFor();
    await newest(page, 'writer').and(waitingRow(page)).waitFor({ timeout: 15000 });
    const again = await (await fetch(`${secondURL}/permission`)).json();
    assert.deepEqual(again.map((r) => r.id), [asked.id], 'the same request, asked again');
    assert.equal(await newest(page, 'lead').getAttribute('data-status'), 'running', 'the root runs on');

    await newest(page, 'writer').click();
    const card = page.locator('.approval[data-state="pending"]');
    await card.waitFor();
    assert.equal(await card.locator('.ap-title').textContent(), 'Write notes.md');
    await shot(page, 'approval-restart-pending');
    await card.locator('button.ap-once').click();
    await page.locator('.approval[data-state="once"] .ap-result:text-is("Allowed once here")').waitFor();
    await runDone(page);
    assert.equal(await waitingRow(page).count(), 0, 'the waiting mark goes');
    assert.equal(readFileSync(note, 'utf8'), NOTE);
    // The root's transcript: its prompt, then its final answer.
    await newest(page, 'lead').click();
    await page.locator('.part.text:has-text("Lead done: the desk has finished.")').waitFor();
    await page.locator('#transcript :text("Write it across a restart")').first().waitFor();
    // One task call, done: the page read no stored turn that the live
    // events then showed again.
    assert.deepEqual(await page.locator('#transcript .tool-wrap:has(.tool-name:text-is("task"))').evaluateAll(
      (ts) => ts.map((t) => t.querySelector('.tool-status, .status')?.textContent ?? t.className)), ['completed']);
    await shot(page, 'approval-restart-done');
    assert.deepEqual(problems, []);
    await page.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
