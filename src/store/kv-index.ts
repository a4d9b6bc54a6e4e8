/**
 * Key lookups on a KV bucket that do not use `kv.keys()`.
 *
 * Why: `kv.keys()` (nats.js v3) opens a push consumer and waits until it has seen `num_pending` entries.
 * When a matching key is rewritten during the scan (history 1 drops the old value), the entry it counted
 * never arrives and the scan hangs — measured here: `keys("*.<id>")` against a key being updated did not
 * return within minutes. Execution records are rewritten constantly while a run goes on, so listing or
 * finding them that way stalls GetExecution and ListExecutions.
 *
 * Instead:
 * - {@link kvKeys} reads the stream's per-subject index (`STREAM.INFO` with `subjects_filter`, paged by
 *   nats.js): one snapshot of the keys that have a stored entry, including tombstones of deleted keys (a
 *   read of such a key finds no value; callers skip it);
 * - {@link kvLastByPattern} fetches the latest entry whose key matches a wildcard pattern with one
 *   `STREAM.MSG.GET last_by_subj` (nats-server 2.9 accepts wildcards there; checked on 2.9.10).
 */
import type { JetStreamManager } from '@nats-io/jetstream';

/** The KV stream and subject prefix of a bucket. */
const streamOf = (bucket: string) => `KV_${bucket}`;
const prefixOf = (bucket: string) => `$KV.${bucket}.`;

/** Keys of `bucket` matching `pattern` (`*` and `>` as in NATS subjects). */
export async function kvKeys(jsm: JetStreamManager, bucket: string, pattern = '>'): Promise<string[]> {
  const prefix = prefixOf(bucket);
  const info = await jsm.streams.info(streamOf(bucket), { subjects_filter: prefix + pattern });
  return Object.keys(info.state.subjects ?? {}).map((s) => s.slice(prefix.length));
}

/** The key and value of the newest live entry whose key matches `pattern`; undefined when none (or deleted). */
export async function kvLastByPattern(jsm: JetStreamManager, bucket: string, pattern: string): Promise<{ key: string; value: Uint8Array } | undefined> {
  const m = await jsm.streams.getMessage(streamOf(bucket), { last_by_subj: prefixOf(bucket) + pattern });
  if (!m) return undefined;
  const op = m.header?.get('KV-Operation');
  if (op === 'DEL' || op === 'PURGE') return undefined;
  return { key: m.subject.slice(prefixOf(bucket).length), value: m.data };
}
