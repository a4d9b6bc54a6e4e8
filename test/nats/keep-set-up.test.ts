/**
 * keepSetUp (src/nats/keep-set-up.ts) against a real nats-server: a failing set-up is retried while
 * connected, a reconnect runs it again, runs never overlap, and close() stops the retries.
 */
import t from 'tap';
import { keepSetUp } from '../../src/nats/keep-set-up.js';
import { natsFixture, sleep, waitFor } from './util.js';

t.test('retried until it succeeds, run again after a reconnect, never two at once', async (t) => {
  const { server, client } = await natsFixture(t);
  let runs = 0;
  let running = 0;
  let overlapped = false;
  const errors: string[] = [];
  const kept = keepSetUp(client, {
    retryMs: 20,
    setup: async () => {
      runs++;
      running++;
      if (running > 1) overlapped = true;
      await sleep(5);
      running--;
      if (runs < 3) throw new Error(`try ${runs}`);
    },
    onError: (err) => errors.push((err as Error).message),
  });
  t.teardown(() => kept.close());
  await waitFor(() => runs === 3, 5000, 'three runs');
  t.same(errors, ['try 1', 'try 2'], 'each failure told, then retried');

  await server.restart();
  await waitFor(() => runs === 4 && client.isConnected, 10_000, 'run again after the reconnect');
  t.equal(overlapped, false);
  t.same(errors, ['try 1', 'try 2']);
});

t.test('close() stops a retrying run', async (t) => {
  const { client } = await natsFixture(t);
  let runs = 0;
  const kept = keepSetUp(client, {
    retryMs: 10_000,
    setup: async () => {
      runs++;
      throw new Error('never set up');
    },
    onError: () => {},
  });
  await waitFor(() => runs === 1, 5000, 'first run');
  kept.close();
  await sleep(100);
  t.equal(runs, 1, 'no run after close()');
});
