/**
 * `ldbox reencrypt`: rewrites every stored workflow whose node `auth` values are in plaintext (stored before
 * encryption at rest) or sealed with an old data key, so that they are sealed with the current
 * `LDBOX_DATA_KEY` (README "Security → Encryption at rest", rotation). Safe while the gateway runs: each
 * rewrite is a compare-and-set on the KV revision. Exit codes: 0 done, 1 a workflow could not be opened
 * (listed on stderr with its key id) or NATS failed, 2 a configuration error.
 *
 * Tests: test/store/workflow-encryption.test.ts.
 */
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { loadDataKeys } from '../config/data-key-config.js';
import type { Env } from '../config/env-parsers.js';
import { loadNatsSettings } from '../config/nats-config.js';
import { natsConnectionOptions } from '../nats/connection-options.js';
import { KV_BUCKETS } from '../nats/streams.js';
import { WorkflowRepository } from '../store/workflow-repository.js';

interface Out {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
}

export async function runReencrypt(env: Env, out: Out): Promise<number> {
  const keys = loadDataKeys(env);
  const nats = loadNatsSettings(env);
  let nc;
  try {
    // The same servers, credentials and TLS as the gateway and the executor.
    nc = await connect({ ...natsConnectionOptions(nats), name: 'ldbox-reencrypt', timeout: 5000 });
  } catch (err) {
    // The error text of a refused login may hold nothing secret, but the URL shown is the redacted one.
    out.stderr(`ldbox reencrypt: cannot connect to ${nats.shown}: ${(err as Error).message}\n`);
    return 1;
  }
  try {
    const jsm = await jetstreamManager(nc, { timeout: 5000 });
    const kvm = new Kvm(jetstream(nc, { timeout: 5000 }));
    try {
      await jsm.streams.info(`KV_${KV_BUCKETS.workflows}`);
    } catch {
      out.stdout('no workflows are stored (the ldbox-workflows bucket does not exist): nothing to do\n');
      return 0;
    }
    const repo = new WorkflowRepository(await kvm.open(KV_BUCKETS.workflows), await kvm.open(KV_BUCKETS.webhooks), jsm, keys);
    const r = await repo.reencryptAll();
    out.stdout(`re-encrypted ${r.rewritten.length} workflow(s) with data key ${keys.current.id}; ${r.unchanged} already used it\n`);
    for (const f of r.failed) out.stderr(`not re-encrypted: ${f.error}\n`);
    return r.failed.length > 0 ? 1 : 0;
  } catch (err) {
    out.stderr(`ldbox reencrypt: ${(err as Error).message}\n`);
    return 1;
  } finally {
    await nc.drain().catch(() => nc.close());
  }
}
