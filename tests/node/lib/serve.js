// serve starts `agentpool serve KIND --addr 127.0.0.1:0 ...args` for the
// front-end suites (each imports this file by its relative path; it needs
// nothing but Node's own modules) and resolves, once the server printed
// "KIND listening on URL", {url, stop, stderr, proc}: stop() ends it
// (SIGTERM, then SIGKILL after 5 s) and resolves when it exited. It
// rejects when the server exits first or does not listen within 15 s.
import { spawn } from 'node:child_process';

export async function serve(bin, kind, args, { cwd, env } = {}) {
  const proc = spawn(bin, ['serve', kind, '--addr', '127.0.0.1:0', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
    cwd,
    env: env ?? process.env,
  });
  let stderr = '';
  const listening = new RegExp(`${kind} listening on (http://127\\.0\\.0\\.1:\\d+)`);
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${stderr}`)), 15000);
    proc.stderr.setEncoding('utf8');
    proc.stderr.on('data', (chunk) => {
      stderr += chunk;
      const m = stderr.match(listening);
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
  const stop = async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    proc.kill('SIGTERM');
    const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(t);
  };
  return { url, stop, stderr: () => stderr, proc };
}
