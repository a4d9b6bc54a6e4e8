/** Shared set-up for the NATS tests: a real server per test file, a fast-reconnecting client. */
import type { Test } from 'tap';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectNats, type NatsClient } from '../../src/nats/connect.js';
import { JOBS_CONSUMER } from '../../src/nats/job-consumer.js';
import { startNatsServer, type NatsServerOptions, type TestNatsServer } from '../helpers/nats-server.js';

export interface NatsFixture {
  server: TestNatsServer;
  client: NatsClient;
  jsm: JetStreamManager;
}

/** Start a server and a connected client; both are torn down with `t`. */
export async function natsFixture(t: Test, opts: NatsServerOptions = {}): Promise<NatsFixture> {
  const server = await startNatsServer(opts);
  t.teardown(() => server.stop());
  const client = testClient(t, server.url);
  const nc = await client.whenConnected();
  const jsm = await jetstreamManager(nc);
  return { server, client, jsm };
}

/** A client that retries every ~100 ms (tests restart servers), closed with `t`. */
export function testClient(t: Test, url: string, name = 'ldbox-test'): NatsClient {
  const client = connectNats(url, { name, reconnectTimeWaitMs: 100, reconnectJitterMs: 50, connectTimeoutMs: 1000 });
  t.teardown(() => client.close(500));
  return client;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Poll `cond` every 20 ms until true; fails the wait (throws) after `timeoutMs`. */
export async function waitFor(cond: () => boolean | Promise<boolean>, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(20);
  }
}

/**
 * The reconnect attempts `nc` has made since this call (nats.js reports each dial as a `reconnecting`
 * status). For a test that keeps a server away "for a few reconnect attempts": it waits until that many
 * were made, a condition, where a pause would guess how many fit in it. Call it before the server goes.
 */
export function reconnectAttempts(nc: NatsConnection): () => number {
  let attempts = 0;
  void (async () => {
    for await (const s of nc.status()) if (s.type === 'reconnecting') attempts++;
  })().catch(() => undefined);
  return () => attempts;
}

export const enc = new TextEncoder();

/**
 * A TCP proxy on a random loopback port to `targetPort`, to cut one client off NATS while others stay
 * connected (a network partition): `cut()` drops every connection and refuses new ones; `restore()`
 * accepts again on the same port.
 */
export interface TcpProxy {
  port: number;
  url: string;
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(t: Test, targetPort: number): Promise<TcpProxy> {
  const { createServer, connect } = await import('node:net');
  const sockets = new Set<import('node:net').Socket>();
  const make = () =>
    createServer((client) => {
      const upstream = connect({ host: '127.0.0.1', port: targetPort });
      sockets.add(client).add(upstream);
      const done = () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(client);
        sockets.delete(upstream);
      };
      client.pipe(upstream).pipe(client);
      client.on('error', done).on('close', done);
      upstream.on('error', done).on('close', done);
    });
  let server = make();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as import('node:net').AddressInfo).port;
  const closeServer = () => new Promise<void>((r) => server.close(() => r()));
  const proxy: TcpProxy = {
    port,
    url: `nats://127.0.0.1:${port}`,
    async cut() {
      const closed = closeServer();
      for (const s of sockets) s.destroy();
      sockets.clear();
      await closed;
    },
    async restore() {
      server = make();
      await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
    },
    async close() {
      for (const s of sockets) s.destroy();
      if (server.listening) await closeServer();
    },
  };
  t.teardown(() => proxy.close());
  return proxy;
}

/**
 * Whether every job in JOBS is acked, from the executor's consumer's view: its ack floor at the stream's
 * last job, nothing awaiting an ack, nothing undelivered. Not the stream's message count: after a SIGKILL,
 * nats-server 2.9 restores from disk the removals of acked jobs it had not yet written, so acked jobs can
 * stay in the stream below the ack floor, never delivered again (2.10 removes them on recovery).
 */
export async function jobsAllAcked(jsm: JetStreamManager): Promise<{ done: boolean; detail: string }> {
  const [stream, consumer] = await Promise.all([jsm.streams.info('JOBS'), jsm.consumers.info('JOBS', JOBS_CONSUMER)]);
  return {
    done: consumer.ack_floor.stream_seq === stream.state.last_seq && consumer.num_ack_pending === 0 && consumer.num_pending === 0,
    detail:
      `stream last seq ${stream.state.last_seq} (${stream.state.messages} kept), ack floor ${consumer.ack_floor.stream_seq}, ` +
      `${consumer.num_ack_pending} awaiting ack, ${consumer.num_pending} undelivered`,
  };
}
