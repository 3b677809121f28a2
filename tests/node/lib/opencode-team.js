// The real `opencode acp` as a member of a parallel team, offline, for the
// front-end suites (acp, agui, opencode, web): each imports this file by
// its relative path (it needs nothing but Node's own modules, so it has no
// package.json and `make test-node` does not run it as a suite).
//
// opencodeTeam() starts a fake OpenAI-compatible model server on loopback,
// writes an opencode project whose opencode.json points at it, and a
// manifest whose team `pair` runs a native agent (`native`, a scripted
// model) beside that opencode (`opencode`, provider custom: the pinned
// binary of tests/acpagents, HOME and XDG directories in a temporary
// folder, no models fetch). The binary comes from
// $AGENTPOOL_ACP_NODE_MODULES (make test-node sets it), else
// tests/acpagents/node_modules; without it the caller skips, except under
// CI=true, where opencodeTeam throws.
import { existsSync, mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../../..');

// What the two members answer; the tests look for these texts.
export const NATIVE_ANSWER = 'The native member checked the plan.';
export const OPENCODE_ANSWER = 'opencode says hello from the fake model.';
// opencode first thinks and reads NOTES_FILE (relative to its project,
// which holds NOTES_TEXT).
export const THOUGHT = 'The notes may say what to greet.';
export const NOTES_FILE = 'notes.md';
export const NOTES_TEXT = 'Greet the team.\n';

// opencode's initialize takes 10 to 20 s on a loaded 2-core machine (a
// minute under a load of 13), and the run waits for it: the tests' bound
// on one run, and on one test.
export const RUN_TIMEOUT_MS = 240000;
export const TEST_TIMEOUT_MS = 300000;

// opencodeBinary is the pinned opencode, or a reason to skip
// ({skip: why}); under CI=true a missing binary is an error.
export function opencodeBinary() {
  const modules = process.env.AGENTPOOL_ACP_NODE_MODULES || path.join(repo, 'tests/acpagents/node_modules');
  const bin = path.join(modules, 'opencode-linux-x64/bin/opencode');
  if (existsSync(bin)) return { bin };
  const why = `the real opencode is not installed (${bin}): run \`cd tests/acpagents && npm install --no-save\` or set AGENTPOOL_ACP_NODE_MODULES`;
  if (process.env.CI === 'true') throw new Error(why);
  return { skip: why };
}

// startFakeModel serves /v1/chat/completions on a free loopback port. A
// request that offers opencode's `read` tool and has no tool result yet
// is answered with a thought and a call of read on NOTES_FILE (so that the
// member's thinking and tool calls show too); any other request with
// answer, streamed word by word (so that it arrives as several chunks),
// then a usage chunk. Request bodies are bounded (1 MiB); other paths
// answer 404.
export function startFakeModel(answer) {
  const server = http.createServer((req, res) => {
    const chunks = [];
    let size = 0;
    req.on('data', (c) => {
      size += c.length;
      if (size > 1 << 20) req.destroy();
      else chunks.push(c);
    });
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url.endsWith('/chat/completions')) {
        res.writeHead(404).end();
        return;
      }
      let body = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        res.writeHead(400).end();
        return;
      }
      const offersRead = (body.tools ?? []).some((t) => t.function?.name === 'read');
      const hasResult = (body.messages ?? []).some((m) => m.role === 'tool');
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = (delta, finish, extra = {}) =>
        res.write(`data: ${JSON.stringify({
          id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'fake-model',
          choices: delta ? [{ index: 0, delta, finish_reason: finish }] : [], ...extra,
        })}\n\n`);
      chunk({ role: 'assistant', content: '' }, null);
      if (offersRead && !hasResult) {
        THOUGHT.split(' ').forEach((w, i) => chunk({ reasoning_content: i ? ` ${w}` : w }, null));
        chunk({ tool_calls: [{ index: 0, id: 'call_read_1', type: 'function',
          function: { name: 'read', arguments: JSON.stringify({ filePath: NOTES_FILE }) } }] }, null);
        chunk({}, 'tool_calls');
      } else {
        answer.split(' ').forEach((w, i) => chunk({ content: i ? ` ${w}` : w }, null));
        chunk({}, 'stop');
      }
      chunk(null, null, { usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 } });
      res.end('data: [DONE]\n\n');
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const url = `http://127.0.0.1:${server.address().port}`;
      resolve({
        url,
        close: () => new Promise((r) => {
          server.closeAllConnections();
          server.close(() => r());
        }),
      });
    });
  });
}

const q = (s) => JSON.stringify(s); // a YAML double-quoted scalar

// opencodeTeam sets up the model, the opencode project and the manifest
// (extraYAML: more top-level manifest keys, e.g. hooks) in a temporary
// directory: {skip} when the binary is missing, else {manifest, dir,
// project, leftovers, close}. leftovers() lists the processes still
// running with this opencode's HOME in their environment (an opencode
// that outlived its run: none once the server stopped); close() kills
// those, stops the model and removes the directory.
export async function opencodeTeam({ extraYAML = '' } = {}) {
  const found = opencodeBinary();
  if (found.skip) return { skip: found.skip };
  const model = await startFakeModel(OPENCODE_ANSWER);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agentpool-opencode-team-'));
  const project = path.join(dir, 'project');
  const home = path.join(dir, 'home');
  mkdirSync(project);
  mkdirSync(home);
  writeFileSync(path.join(project, NOTES_FILE), NOTES_TEXT);
  writeFileSync(path.join(project, 'opencode.json'), JSON.stringify({
    $schema: 'https://opencode.ai/config.json',
    model: 'fake/fake-model',
    share: 'disabled',
    autoupdate: false,
    provider: {
      fake: {
        npm: '@ai-sdk/openai-compatible',
        name: 'Fake',
        options: { baseURL: `${model.url}/v1`, apiKey: 'none' },
        models: { 'fake-model': { name: 'Fake model', tool_call: true } },
      },
    },
  }, null, 2));
  const env = {
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_DATA_HOME: path.join(home, '.local/share'),
    XDG_STATE_HOME: path.join(home, '.local/state'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
    OPENCODE_DISABLE_MODELS_FETCH: '1',
    OPENCODE_DISABLE_AUTOUPDATE: '1',
    OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
  };
  const manifest = path.join(dir, 'agentpool.yaml');
  writeFileSync(manifest, `# A parallel team of a native agent and the real opencode acp.
default_agent: pair
agents:
  native:
    description: A native agent on a scripted model.
    model:
      type: scripted
      turns: [${q(NATIVE_ANSWER)}]
  opencode:
    type: acp
    provider: custom
    command: ${q(found.bin)}
    args: [acp]
    cwd: ${q(project)}
    description: The real opencode, on a fake model.
    env:
${Object.entries(env).map(([k, v]) => `      ${k}: ${q(v)}`).join('\n')}
teams:
  pair:
    description: The native agent and opencode side by side.
    mode: parallel
    members: [native, opencode]
${extraYAML}`);
  const leftovers = () => processesWithEnv(`HOME=${home}`);
  return {
    manifest,
    dir,
    project,
    leftovers,
    close: async () => {
      for (const pid of leftovers()) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone already
        }
      }
      await model.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// processesWithEnv lists the processes whose environment holds the
// entry (NAME=value); those whose environment cannot be read are left out.
function processesWithEnv(entry) {
  const pids = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/environ`, 'latin1').split('\0').includes(entry)) pids.push(Number(name));
    } catch {
      // ended, or not ours
    }
  }
  return pids;
}
