/**
 * Keeps what a role needs on NATS (streams, buckets, stores) set up: runs `setup` whenever the client
 * (re)connects, and retries it every `retryMs` while it fails and the client stays connected. NATS may come
 * back from an outage without its data (a restarted server without persistence, a new cluster), and a role
 * that starts before NATS, or before the gateway created the buckets, must get there on its own.
 *
 * One run at a time: a reconnect while a run is still retrying does not start a second one (the running
 * one uses the new connection on its next try, since nats.js keeps one connection object across reconnects).
 *
 * Used by the gateway (creates the JOBS stream and the KV buckets) and the executor (opens the buckets).
 * Tests: test/nats/keep-set-up.test.ts; test/gateway/gateway-outage.test.ts, test/executor/executor.test.ts.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import type { NatsClient } from './connect.js';

export interface KeepSetUpOptions {
  /** Sets up on this connection; throws to be retried. */
  setup: (nc: NatsConnection) => Promise<void>;
  /** Told of each failed run before the retry (the role logs it as it sees fit). */
  onError: (err: unknown) => void;
  /** Pause between failed runs. Default 1000 ms. */
  retryMs?: number;
}

/** A running {@link keepSetUp}; `close()` stops it (a run in progress ends after its current try). */
export interface KeptSetUp {
  close(): void;
}

export function keepSetUp(client: NatsClient, options: KeepSetUpOptions): KeptSetUp {
  const retryMs = options.retryMs ?? 1000;
  const stop = new AbortController();
  let running = false;

  const run = async (): Promise<void> => {
    if (running) return;
    running = true;
    try {
      while (!stop.signal.aborted && client.isConnected) {
        try {
          await options.setup(client.nc);
          return;
        } catch (err) {
          if (stop.signal.aborted) return;
          options.onError(err);
          await pause(retryMs, stop.signal);
        }
      }
    } finally {
      running = false;
    }
  };

  const unsubscribe = client.onState((state) => {
    if (state === 'connected') void run();
  });
  if (client.isConnected) void run();
  return {
    close() {
      stop.abort();
      unsubscribe();
    },
  };
}

/** Resolves after `ms`, or at once when `signal` aborts (so that closing is not held up by a retry pause). */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
