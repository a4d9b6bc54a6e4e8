/**
 * Preloaded (`node --import`) by `npm run test:unit`: there, a test that starts a server (any `listen`)
 * or a child process fails at once, naming what it tried, instead of quietly making the fast run slow or
 * needing nats-server. Such a test belongs in the full suite only: take it out of test/unit-tests.txt.
 */
import childProcess from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';

function refuse(what: string): never {
  throw new Error(`${what} in a unit test (npm run test:unit): unit tests start no server and no child process; remove this file from test/unit-tests.txt`);
}

const cp = childProcess as unknown as Record<string, unknown>;
for (const fn of ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork']) {
  cp[fn] = () => refuse(`child_process.${fn}`);
}
net.Server.prototype.listen = function listen(): never {
  return refuse('listen');
};
// `import { spawn } from 'node:child_process'` reads the ESM bindings: make them see the replacements.
syncBuiltinESMExports();
