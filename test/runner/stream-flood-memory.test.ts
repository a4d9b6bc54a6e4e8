/**
 * Memory under an HTTP/2 stream flood without a token, measured on a real `ldbox runner` child process
 * (its resident set from /proc/<pid>/status, worker threads included): 10 connections opening 5000
 * half-open Execute streams each (50 000 in all; unbounded, 10 000 of them took the runner from 130 to
 * 840 MB and 120 000 ran it out of heap). With MAX_CONCURRENT_STREAMS the streams beyond the cap are
 * refused, so the growth levels off (measured: ~+170 MB, the same for 20 000 and for 100 000 streams, V8's
 * heap growing before it collects), and a health check sent while the flood is being refused answers.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import t from 'tap';
import { RunnerService } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { anyFreePort } from '../../src/net/local-ports.js';
import { grpcCallHeaders, h2frame, onFrames } from '../helpers/http2-frames.js';
import { BIN, cleanEnv, nodeChild } from '../helpers/ldbox-cli.js';

const EXECUTE = `/${RunnerService.typeName}/Execute`;
const CONNECTIONS = 10;
const STREAMS_PER_CONNECTION = 5000;
/**
 * Generous (see above): on a loaded machine the GC falls behind and the growth reached ~330 MB; the
 * unbounded runner grew by ~700 MB per 10 000 streams, ~3.5 GB for this flood, and then died.
 */
const MAX_GROWTH_BYTES = 800 * 1024 * 1024;

/** The resident set of process `pid`, in bytes. */
function rssBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Number(/(\d+)/.exec(line ?? '')?.[1] ?? NaN) * 1024;
}

const HEADERS = 0x1;
const RST_STREAM = 0x3;
const SETTINGS = 0x4;
const GOAWAY = 0x7;

/**
 * One flooding connection: the preface, then `streams` HEADERS frames without END_STREAM and without a
 * token (each stream half-open, its body never sent). Resolves once the server has answered every stream
 * beyond `cap` (RST_STREAM), sent GOAWAY or closed the connection; the socket is left open.
 */
function flood(
  port: number,
  streams: number,
  cap: number,
): { firstRefusal: Promise<void>; done: Promise<{ socket: net.Socket; refused: number; goaway: boolean }> } {
  let refusedOnce!: () => void;
  const firstRefusal = new Promise<void>((resolve) => (refusedOnce = resolve));
  return { firstRefusal, done: flooding(port, streams, cap, () => refusedOnce()) };
}

async function flooding(port: number, streams: number, cap: number, onRefusal: () => void): Promise<{ socket: net.Socket; refused: number; goaway: boolean }> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  await once(socket, 'connect');
  const block = grpcCallHeaders(EXECUTE);
  let refused = 0;
  let goaway = false;
  onFrames(socket, ({ type }) => {
    if (type === RST_STREAM && ++refused === 1) onRefusal();
    if (type === GOAWAY) goaway = true;
  });
  const out = [Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1'), h2frame(SETTINGS, 0, 0, Buffer.alloc(0))];
  for (let i = 0; i < streams; i++) out.push(h2frame(HEADERS, 0x4, 1 + 2 * i, block));
  socket.write(Buffer.concat(out));
  while (refused < streams - cap && !goaway && !socket.destroyed) await once(socket, 'data').catch(() => undefined);
  if (refused === 0) onRefusal();
  return { socket, refused, goaway };
}

t.test('a stream flood without a token leaves the runner process memory bounded, and health answers meanwhile', async (t) => {
  const port = await anyFreePort();
  const proc = spawn(...nodeChild([BIN, 'runner']), {
    env: cleanEnv({ LDBOX_RUNNER_PORT: String(port), LDBOX_POOL_SIZE: '1', LDBOX_RUNNER_TOKEN: 'flood-memory-token-0123', LDBOX_LOG_LEVEL: 'error' }),
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = once(proc, 'exit');
  t.teardown(async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGTERM');
      await exited;
    }
  });
  // Ready: /readyz answers 200 (polled, as a probe would; each failed try waits for the port).
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`the runner exited with ${proc.exitCode}`);
    const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  for (let i = 0; i < 20; i++) await (await fetch(`http://127.0.0.1:${port}/healthz`)).text();
  const before = rssBytes(proc.pid!);

  const floods = Array.from({ length: CONNECTIONS }, () => flood(port, STREAMS_PER_CONNECTION, 128));
  // Every connection is being refused streams: the flood is under way.
  await Promise.all(floods.map((f) => f.firstRefusal));
  const started = Date.now();
  const health = await fetch(`http://127.0.0.1:${port}/healthz`);
  const healthMs = Date.now() - started;
  t.equal(health.status, 200, `a health check during the flood answers (in ${healthMs} ms)`);
  const results = await Promise.all(floods.map((f) => f.done));
  const during = rssBytes(proc.pid!);
  t.ok(
    results.every((r) => r.refused >= STREAMS_PER_CONNECTION - 128 || r.goaway || r.socket.destroyed),
    'every connection had its streams beyond the cap refused, or was sent away',
  );
  t.ok(during - before < MAX_GROWTH_BYTES, `RSS ${(before / 2 ** 20).toFixed(0)} MB → ${(during / 2 ** 20).toFixed(0)} MB with the flood's connections open`);
  const again = await fetch(`http://127.0.0.1:${port}/healthz`);
  t.equal(again.status, 200, 'health answers after the flood');
  for (const r of results) r.socket.destroy();
  t.equal(proc.exitCode, null, 'the runner is still running');
});
