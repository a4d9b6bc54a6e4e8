/**
 * Where the nats-server binary is: `scripts/ensure-nats-server.sh` decides (`$NATS_SERVER_BIN`, PATH, the
 * usual locations; installs Debian's `nats-server` package when missing and we are root with apt-get;
 * otherwise it fails with a one-line hint, which becomes the error message). One lookup for `ldbox dev`,
 * the tests and the benches, so all three run the same binary.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repo's `scripts/ensure-nats-server.sh`, found from this file (src/nats or dist/src/nats). */
function ensureScript(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  for (const up of ['../..', '../../..']) {
    const p = join(resolve(here, up), 'scripts', 'ensure-nats-server.sh');
    if (existsSync(p)) return p;
  }
  throw new Error('scripts/ensure-nats-server.sh not found next to the ldbox package');
}

let found: Promise<string> | undefined;

/** The nats-server binary's path, installing it when permitted; rejects with the script's hint otherwise. */
export function findNatsServerBinary(): Promise<string> {
  // Cached once it succeeds: test files start many servers, and the script is a subprocess each time.
  found ??= new Promise<string>((resolvePath, reject) => {
    execFile('bash', [ensureScript()], { timeout: 600_000 }, (err, stdout, stderr) => {
      const path = stdout.trim();
      if (err || path === '') reject(new Error(stderr.trim() || err?.message || 'nats-server not found'));
      else resolvePath(path);
    });
  });
  found.catch(() => (found = undefined));
  return found;
}
