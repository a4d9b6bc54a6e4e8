/**
 * Key lookups that keep answering while the keys they look at are being rewritten (kv.keys() hung here,
 * see src/store/kv-index.ts), against a real nats-server.
 */
import t from 'tap';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { kvKeys, kvLastByPattern } from '../../src/store/kv-index.js';
import { natsFixture } from '../nats/util.js';

const dec = new TextDecoder();

/** Rejects when `p` takes longer than `ms`: a hang detector, not a timing goal. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([p, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not answer in ${ms} ms`)), ms)))]).finally(() =>
    clearTimeout(timer),
  );
}

t.test('kvKeys and kvLastByPattern answer while the matching key is rewritten', async (t) => {
  const { client, jsm } = await natsFixture(t);
  const nc = await client.whenConnected();
  const kv = await new Kvm(jetstream(nc)).create('idx-test', { history: 1 });
  for (let i = 0; i < 5; i++) await kv.put(`wf_a.ex_${i}`, `v${i}`);
  await kv.put('wf_b.ex_9', 'other');
  await kv.put('wf_b.ex_8', 'gone');
  await kv.delete('wf_b.ex_8');

  let stop = false;
  let writes = 0;
  const writer = (async () => {
    while (!stop) {
      await kv.put('wf_a.ex_1', `w${writes++}`);
      await new Promise((r) => setTimeout(r, 2));
    }
  })();
  for (let i = 0; i < 40; i++) {
    const keys = await within(kvKeys(jsm, 'idx-test', 'wf_a.*'), 5000, 'kvKeys');
    t.same(keys.sort(), ['wf_a.ex_0', 'wf_a.ex_1', 'wf_a.ex_2', 'wf_a.ex_3', 'wf_a.ex_4']);
    const e = await within(kvLastByPattern(jsm, 'idx-test', '*.ex_1'), 5000, 'kvLastByPattern');
    t.equal(e?.key, 'wf_a.ex_1');
    t.match(dec.decode(e!.value), /^(v1|w\d+)$/);
  }
  stop = true;
  await writer;
  t.ok(writes > 10, 'the key was rewritten during the lookups');
  t.equal(dec.decode((await kvLastByPattern(jsm, 'idx-test', '*.ex_9'))!.value), 'other');
  t.equal(await kvLastByPattern(jsm, 'idx-test', '*.ex_8'), undefined, 'a deleted key reads as absent');
  t.equal(await kvLastByPattern(jsm, 'idx-test', '*.ex_7'), undefined, 'a missing key reads as absent');
  t.same(await kvKeys(jsm, 'idx-test', 'nothing.*'), []);
});
