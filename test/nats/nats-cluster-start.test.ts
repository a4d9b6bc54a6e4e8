/**
 * startNatsCluster's failure path (src/nats/nats-cluster.ts): a cluster that cannot start rejects with the
 * cause, after its attempts, and leaves no node running and nothing holding its directory.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { startNatsCluster } from '../../src/nats/nats-cluster.js';

t.test('a cluster whose nodes cannot start rejects and leaves its directory free', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ldbox-cluster-start-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const err = await startNatsCluster({ dir, bin: join(dir, 'no-such-nats-server'), startTimeoutMs: 5000 }).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(err instanceof Error, 'rejected with the cause');
  t.match(String((err as Error).message), /no-such-nats-server|ENOENT/, 'the cause names the missing binary');
  // What a caller does after a failed start: the directory is removable at once.
  for (const name of readdirSync(dir)) rmSync(join(dir, name), { recursive: true });
  t.same(readdirSync(dir), [], 'nothing is left writing into it');
});
