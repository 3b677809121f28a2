// Shared helpers of the real-client tests: start agentpool, run a client
// binary from node_modules, drive a terminal program through tmux.
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const repo = path.resolve(here, '../../..');
export const bin = process.env.AGENTPOOL_BIN || path.join(repo, 'bin/agentpool');
export const nestedManifest = path.join(repo, 'examples/nested.yaml');
export const slowManifest = path.join(repo, 'tests/node/acp/fixtures/slow.yaml');
export const opencodeBin = path.join(here, 'node_modules/.bin/opencode');
export const acpxBin = path.join(here, 'node_modules/.bin/acpx');

const procs = [];
const dirs = [];

// tempDir makes a directory removed by cleanup.
export function tempDir(prefix) {
  const d = mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.push(d);
  return d;
}

// clientEnv is an environment whose home and XDG directories are fresh,
// so that the clients' config, state and caches stay out of the user's.
export function clientEnv() {
  const home = tempDir('agentpool-client-home-');
  return {
    ...process.env,
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_DATA_HOME: path.join(home, '.local/share'),
    XDG_STATE_HOME: path.join(home, '.local/state'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
    OPENCODE_DISABLE_AUTOUPDATE: '1',
    OPENCODE_DISABLE_MODELS_FETCH: '1',
    NO_COLOR: '1',
  };
}

// startOpencodeServer runs `agentpool serve opencode` on a free loopback
// port and resolves its base URL (from the "opencode listening on" line).
export function startOpencodeServer(manifest, cwd) {
  const proc = spawn(bin, ['serve', 'opencode', '--addr', '127.0.0.1:0', '--db', ':memory:', '-c', manifest], {
    stdio: ['ignore', 'ignore', 'pipe'],
    cwd,
  });
  procs.push(proc);
  let stderr = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${stderr}`)), 15000);
    proc.stderr.setEncoding('utf8');
    proc.stderr.on('data', (chunk) => {
      stderr += chunk;
      const m = stderr.match(/opencode listening on (http:\/\/127\.0\.0\.1:\d+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${stderr}`));
    });
  });
}

// run runs a program to its end and resolves {code, stdout, stderr}.
export function run(file, args, opts = {}) {
  return new Promise((resolve, reject) => {
    const p = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
    procs.push(p);
    let stdout = '';
    let stderr = '';
    p.stdout.setEncoding('utf8');
    p.stderr.setEncoding('utf8');
    p.stdout.on('data', (c) => {
      stdout += c;
      opts.onStdout?.(stdout, p);
    });
    p.stderr.on('data', (c) => (stderr += c));
    const timer = setTimeout(() => {
      p.kill('SIGKILL');
      reject(new Error(`${path.basename(file)} ${args.join(' ')} did not finish:\n${stdout}\n${stderr}`));
    }, opts.timeout ?? 60000);
    p.on('error', reject);
    p.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

// stripAnsi removes terminal escape sequences.
export function stripAnsi(s) {
  // eslint-disable-next-line no-control-regex
  return s.replace(/\x1b\[[0-9;?]*[ -/]*[@-~]/g, '');
}

export function hasTmux() {
  try {
    execFileSync('tmux', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

// Tmux drives one terminal program in a detached tmux session of its own
// server (-L), so that nothing of the user's tmux is touched.
export class Tmux {
  constructor(command, env, cwd) {
    this.socket = `agentpool-test-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
    this.env = env; // the tmux server, started by the first command, passes it on
    this.tmux('new-session', '-d', '-s', 'main', '-x', '160', '-y', '45', '-c', cwd, command);
  }

  tmux(...args) {
    return execFileSync('tmux', ['-L', this.socket, ...args], { encoding: 'utf8', env: this.env ?? process.env });
  }

  screen() {
    return this.tmux('capture-pane', '-p', '-t', 'main');
  }

  keys(...keys) {
    this.tmux('send-keys', '-t', 'main', ...keys);
  }

  type(text) {
    this.tmux('send-keys', '-t', 'main', '-l', text);
  }

  // click sends a left click (SGR mouse report) at the 1-based column and
  // row of the screen.
  click(col, row) {
    this.type(`\x1b[<0;${col};${row}M`);
    this.type(`\x1b[<0;${col};${row}m`);
  }

  // clickText clicks the first line of the screen that contains text.
  clickText(text) {
    const lines = this.screen().split('\n');
    const row = lines.findIndex((l) => l.includes(text));
    if (row < 0) throw new Error(`no "${text}" on the screen:\n${lines.join('\n')}`);
    this.click(lines[row].indexOf(text) + 2, row + 1);
  }

  // open clicks the line showing text until the screen matches re (a
  // click that lands while the view still settles is lost).
  async open(text, re, what) {
    for (let tries = 0; ; tries++) {
      await new Promise((r) => setTimeout(r, 300));
      this.clickText(text);
      try {
        return await this.waitFor(re, what, 3000);
      } catch (e) {
        if (tries === 5) throw e;
      }
    }
  }

  // waitFor polls the screen until it matches re; it returns the screen.
  async waitFor(re, what, timeout = 30000) {
    const deadline = Date.now() + timeout;
    let last = '';
    while (Date.now() < deadline) {
      last = this.screen();
      if (re.test(last)) return last;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`timed out waiting for ${what} (${re}); the screen:\n${last}`);
  }

  // screenAndCursor is the screen and the terminal cursor's 0-based
  // column and row, read by one tmux command so that they agree.
  screenAndCursor() {
    const out = this.tmux('display-message', '-p', '-t', 'main', '#{cursor_x} #{cursor_y}', ';', 'capture-pane', '-p', '-t', 'main');
    const nl = out.indexOf('\n');
    const [x, y] = out.slice(0, nl).split(' ').map(Number);
    return { screen: out.slice(nl + 1), x, y };
  }

  // waitForCursorOn polls until the cursor sits on a line of the screen
  // that contains text; it returns the screen. A TUI moves the cursor
  // into an input when it focuses it, and the OpenCode TUI does that a
  // moment after it draws a dialog: keys sent in between are lost, so a
  // drawn input is no sign that it takes keys; the cursor in it is.
  async waitForCursorOn(text, what, timeout = 30000) {
    const deadline = Date.now() + timeout;
    let last;
    while (Date.now() < deadline) {
      last = this.screenAndCursor();
      if (last.screen.split('\n')[last.y]?.includes(text)) return last.screen;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(
      `timed out waiting for ${what} (the cursor on "${text}"; it is at column ${last?.x}, row ${last?.y}); the screen:\n${last?.screen}`,
    );
  }

  kill() {
    try {
      this.tmux('kill-server');
    } catch {
      // already gone
    }
  }
}

// cleanup stops every process started here and removes the temp dirs.
export async function cleanup() {
  await Promise.all(
    procs.map((p) => {
      if (p.exitCode !== null || p.signalCode !== null) return undefined;
      const exited = new Promise((resolve) => p.once('close', resolve));
      p.kill('SIGTERM');
      const t = setTimeout(() => p.kill('SIGKILL'), 5000);
      return exited.finally(() => clearTimeout(t));
    }),
  );
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}

export function assertBinaries() {
  for (const f of [bin, opencodeBin, acpxBin]) {
    if (!existsSync(f)) throw new Error(`${f} does not exist (make build; npm ci in tests/node/clients)`);
  }
}

// Recorder is a loopback HTTP proxy in front of a server that keeps what
// a client sent and what it got back: each request's method, path,
// headers, status, body and answer (the first 64 KiB of each; of an event
// stream, its chunks and their arrival times), and the times of its start,
// first answer byte and end. Tests read it to see what the real client
// asked for.
export class Recorder {
  constructor(target) {
    this.target = new URL(target);
    this.requests = [];
  }

  // start listens on a free loopback port and resolves the proxy's URL.
  async start() {
    const http = await import('node:http');
    this.server = http.createServer((req, res) => {
      const rec = { method: req.method, path: req.url, headers: req.headers, start: Date.now(), body: '', answer: '' };
      this.requests.push(rec);
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        rec.body = body.subarray(0, 65536).toString('utf8');
        const up = http.request(
          { host: this.target.hostname, port: this.target.port, method: req.method, path: req.url, headers: req.headers },
          (ur) => {
            rec.status = ur.statusCode;
            rec.firstByte = Date.now();
            const sse = String(ur.headers['content-type'] || '').startsWith('text/event-stream');
            if (!sse) {
              // A whole answer is passed on a turn of the event loop after
              // its end, so that event-stream chunks read in the same turn
              // reach the client first: `opencode run` quits at its
              // prompt's answer, and the server sends that answer after
              // the events (opencode/events.go, awaitDelivery). A proxy
              // stalled by a loaded machine would otherwise pass on both
              // at once, in whatever order its sockets were read.
              const body = [];
              ur.on('data', (c) => {
                if (rec.answer.length < 65536) rec.answer += c.toString('utf8');
                body.push(c);
              });
              ur.on('end', () => {
                rec.end = Date.now();
                setImmediate(() => {
                  res.writeHead(ur.statusCode, ur.headers);
                  res.end(Buffer.concat(body));
                });
              });
              return;
            }
            res.writeHead(ur.statusCode, ur.headers);
            rec.events = [];
            ur.on('data', (c) => {
              // An event stream's chunks with their arrival times (the
              // last 4096).
              rec.events.push({ t: Date.now(), text: c.toString('utf8') });
              if (rec.events.length > 4096) rec.events.shift();
              res.write(c);
            });
            ur.on('end', () => {
              rec.end = Date.now();
              res.end();
            });
          },
        );
        up.on('error', (e) => {
          rec.status = 502;
          res.writeHead(502).end(String(e));
        });
        // The client gone (an event stream closed): let the server see it.
        res.on('close', () => {
          if (!res.writableFinished) up.destroy();
        });
        up.end(body);
      });
    });
    await new Promise((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${this.server.address().port}`;
  }

  // find returns the recorded requests whose "METHOD path" matches re.
  find(re) {
    return this.requests.filter((r) => re.test(`${r.method} ${r.path}`));
  }

  // waitFor resolves the first recorded request matching re that has its
  // answer (status and end), polling up to timeout ms.
  async waitFor(re, what, timeout = 30000) {
    const deadline = Date.now() + timeout;
    while (Date.now() < deadline) {
      const r = this.find(re).find((x) => x.end);
      if (r) return r;
      await new Promise((r) => setTimeout(r, 100));
    }
    const seen = this.requests.map((r) => `${r.method} ${r.path} ${r.status ?? '…'}`).join('\n');
    throw new Error(`timed out waiting for ${what} (${re}); the requests:\n${seen}`);
  }

  // timeline describes the requests recorded from index since on, with
  // their times in ms after the first one's start (for a failure's
  // message): start, first byte and end of each, and when each event
  // stream's chunks arrived and what types of events they carried.
  timeline(since = 0) {
    const reqs = this.requests.slice(since);
    const t0 = reqs[0]?.start ?? 0;
    const at = (t) => (t === undefined ? '…' : t - t0);
    return reqs
      .map((r) => {
        let line = `${r.method} ${r.path} ${r.status ?? '…'}: start ${at(r.start)}, first byte ${at(r.firstByte)}, end ${at(r.end)}`;
        for (const e of r.events ?? []) {
          const types = [...e.text.matchAll(/"id":"[^"]*","type":"([^"]+)"/g)].map((m) => m[1]);
          line += `\n  ${at(e.t)}: ${types.join(' ')}`;
        }
        return line;
      })
      .join('\n');
  }

  close() {
    this.server?.closeAllConnections?.();
    this.server?.close();
  }
}
