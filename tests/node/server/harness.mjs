// Starts `ztvm serve` on a free port for a test file and stops it afterwards. The server prints
// "ztvm serve: listening on http://HOST:PORT" on stdout once it accepts connections; we wait for it.
import { spawn } from 'node:child_process';

export async function startServer(args = [], { timeoutMs = 120000, env = {} } = {}) {
  const bin = process.env.ZTVM_BIN;
  if (!bin) throw new Error('ZTVM_BIN is not set (CTest sets it to the ztvm binary)');
  const proc = spawn(bin, ['serve', '--port', '0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env },
  });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; if (process.env.ZTVM_SERVER_LOG) process.stderr.write(d); });
  const url = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`server did not start in ${timeoutMs} ms:\n${stderr}`)), timeoutMs);
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/\S+)/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited with ${code} before listening:\n${stderr}`)); });
  });
  let exited = null;
  proc.on('exit', (code, signal) => { exited = { code, signal }; });
  return {
    url,
    proc,
    stderr: () => stderr,
    alive: () => exited === null,
    exitInfo: () => exited,
    // RSS of the server process in KiB (Linux), for memory-growth checks.
    async rssKiB() {
      const { readFile } = await import('node:fs/promises');
      const status = await readFile(`/proc/${proc.pid}/status`, 'utf8');
      return Number(status.match(/VmRSS:\s+(\d+)/)[1]);
    },
    async stop() {
      if (exited) return exited;
      proc.kill('SIGTERM');
      return await new Promise((resolve) => {
        const t = setTimeout(() => proc.kill('SIGKILL'), 10000);
        proc.on('exit', (code, signal) => { clearTimeout(t); resolve({ code, signal }); });
      });
    },
  };
}
