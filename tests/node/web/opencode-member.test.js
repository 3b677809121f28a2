// Issue 34's "done when" in the web view: a manifest's parallel team of a
// native agent and the real `opencode acp` (offline:
// ../lib/opencode-team.js), run from the prompt box of `agentpool serve
// web` in Debian's headless Chromium (playwright-core): both members are
// rows of the tree under the team (live, then done), the API the page
// reads lists both child sessions under the root, opencode's transcript
// shows its thought, its read call with the file's text and its answer,
// and the native agent's its answer. No opencode process outlives the
// server. Screenshot: out/opencode-member.png.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

import {
  NATIVE_ANSWER, NOTES_FILE, NOTES_TEXT, OPENCODE_ANSWER, RUN_TIMEOUT_MS, TEST_TIMEOUT_MS, THOUGHT, opencodeBinary, opencodeTeam,
} from '../lib/opencode-team.js';
import { serve } from '../lib/serve.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const bin = process.env.AGENTPOOL_BIN || path.resolve(here, '../../../bin/agentpool');
const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';
const out = path.join(here, 'out');
const { skip } = opencodeBinary();

// serveWeb runs `agentpool serve web` on the manifest, without a token.
const serveWeb = (manifest, cwd) => serve(bin, 'web', ['--db', ':memory:', '-c', manifest], { cwd, env: { ...process.env, AGENTPOOL_SERVER_TOKEN: '' } });

test('a team of a native agent and the real opencode: both rows and transcripts', { skip, timeout: TEST_TIMEOUT_MS }, async (t) => {
  assert.ok(existsSync(bin), `AGENTPOOL_BIN ${bin} does not exist (run make build)`);
  assert.ok(existsSync(chromiumPath), `${chromiumPath} does not exist (apt-get install chromium; make test-deps does)`);
  mkdirSync(out, { recursive: true });
  const team = await opencodeTeam();
  t.after(() => team.close());
  const server = await serveWeb(team.manifest, team.dir);
  let stopped = false;
  t.after(() => (stopped ? undefined : server.stop()));
  const profile = mkdtempSync(path.join(os.tmpdir(), 'agentpool-web-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    viewport: { width: 1440, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  t.after(async () => {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  });

  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('requestfailed', (r) => {
    if (new URL(r.url()).pathname === '/event' && /ABORTED/.test(r.failure()?.errorText || '')) return;
    problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`);
  });
  page.on('request', (r) => { if (!r.url().startsWith(server.url)) problems.push(`request off the server: ${r.url()}`); });
  await page.goto(server.url);
  await page.locator('#conn[data-state="live"]').waitFor();
  await page.selectOption('#agent', 'pair');
  await page.fill('#text', 'Say hello.');
  await page.click('#run');

  // Live: both members appear under the team while it runs (opencode's
  // initialize alone takes seconds).
  const row = (agent) => page.locator(`.row:has(.agent:text-is("${agent}"))`);
  await row('opencode').waitFor({ timeout: 30000 });
  await row('native').waitFor({ timeout: 30000 });
  assert.equal(await row('pair').getAttribute('data-status'), 'running', 'the team runs while its members appear');
  await page.locator('.row[data-depth="0"][data-status="done"]').waitFor({ timeout: RUN_TIMEOUT_MS });
  const tree = await page.locator('.row').evaluateAll((rs) =>
    rs.map((r) => [r.querySelector('.agent').textContent, r.dataset.depth, r.dataset.status, r.querySelector('.badge')?.textContent ?? '']));
  assert.deepEqual(
    tree.sort(),
    [['native', '1', 'done', 'member'], ['opencode', '1', 'done', 'member'], ['pair', '0', 'done', '']],
    JSON.stringify(tree),
  );

  // The API the tree is built from: both children under the root.
  const sessions = await (await fetch(`${server.url}/session`)).json();
  const rootID = sessions.find((s) => !s.parentID)?.id;
  assert.ok(rootID, 'a root session');
  assert.deepEqual(sessions.filter((s) => s.parentID === rootID).map((s) => s.agent).sort(), ['native', 'opencode']);

  // opencode's transcript: its thought, its read call and its answer.
  await row('opencode').click();
  await page.locator('.crumbs .path .here:text-is("opencode")').waitFor();
  await page.locator(`.part.text:has-text("${OPENCODE_ANSWER}")`).waitFor();
  await page.locator('.reasoning summary').click();
  await page.locator(`.reasoning:has-text("${THOUGHT}")`).waitFor();
  const tool = page.locator('.tool:has(summary:has-text("read"))');
  await tool.locator('summary').click();
  await tool.locator(`pre:has-text(${JSON.stringify(NOTES_FILE)})`).first().waitFor();
  await tool.locator(`pre:has-text("${NOTES_TEXT.trim()}")`).waitFor();
  await page.screenshot({ path: path.join(out, 'opencode-member.png') });

  // The native member's.
  await row('native').click();
  await page.locator('.crumbs .path .here:text-is("native")').waitFor();
  await page.locator(`.part.text:has-text("${NATIVE_ANSWER}")`).waitFor();
  assert.deepEqual(problems, []);
  await page.close();

  await server.stop();
  stopped = true;
  assert.deepEqual(team.leftovers(), [], 'no opencode process outlived the server');
});
