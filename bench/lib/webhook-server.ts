/**
 * Bench-only: one server under test for bench/webhook.ts, in its own process (so its CPU is its own and it
 * shares no event loop with the load generator). Run as
 *
 *   node dist/bench/lib/webhook-server.js bare|reference|gateway      (with an IPC channel)
 *
 * - `bare`: node:http doing the webhook route's minimum (the notes' server #1): route regex → constant-time
 *   `X-Webhook-Secret` check (length first) → Content-Type check → collect the body → `JSON.parse` → build
 *   the job → 202 `{"executionId"}`. No publish: the upper bound for Node.
 * - `reference`: `bare` + `JSON.stringify(job)` + `await js.publish(subject, data, { msgID })` with STOCK
 *   `jetstream(nc)` from @nats-io/jetstream and a stock `connect()` (no tuning), into a work-queue stream
 *   the parent created (`BENCH_REF_SUBJECT`); a failed publish is 503.
 * - `gateway`: the real ldbox gateway, `startGateway(loadGatewayConfig(process.env), createLogger(...))` as
 *   `ldbox gateway` starts it (access log at `LDBOX_LOG_LEVEL`, default info, on stdout).
 *
 * Env (bare/reference): `BENCH_SECRET`, `NATS_URL`, `BENCH_REF_SUBJECT`.
 *
 * IPC: sends `{type:'ready', port}` once listening (the gateway: once `ready()`); answers
 * `{type:'cpu', id}` with `{type:'cpu', id, user, system}` (process.cpuUsage, µs); `{type:'stop'}` closes
 * and exits.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { startGateway } from '../../gateway/index.js';
import { loadGatewayConfig } from '../../gateway/gateway-config.js';
import { createLogger } from '../../src/logging/logger.js';

type Kind = 'bare' | 'reference' | 'gateway';

const kind = process.argv[2] as Kind;
if (!['bare', 'reference', 'gateway'].includes(kind)) {
  console.error(`usage: webhook-server.js bare|reference|gateway (got ${String(kind)})`);
  process.exit(2);
}
if (!process.send) {
  console.error('webhook-server.js must be started with an IPC channel (by bench/webhook.ts)');
  process.exit(2);
}
const send = (m: unknown) => process.send!(m);

interface Running {
  port: number;
  close(): Promise<void>;
}

// ------------------------------------------------------------------------------------- bare / reference

const ROUTE = /^\/api\/hooks\/workflows\/(wf_[0-9a-hjkmnp-tv-z]{20})$/;

function answer(res: http.ServerResponse, status: number, body: unknown): void {
  const data = Buffer.from(JSON.stringify(body), 'utf8');
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(data.length) });
  res.end(data);
}

async function startMinimal(publish: boolean): Promise<Running> {
  const secret = Buffer.from(process.env.BENCH_SECRET ?? '', 'utf8');
  const subject = process.env.BENCH_REF_SUBJECT ?? '';
  let nc: NatsConnection | undefined;
  let js: JetStreamClient | undefined;
  if (publish) {
    nc = await connect({ servers: process.env.NATS_URL }); // stock options
    js = jetstream(nc); // stock options
  }
  const server = http.createServer((req, res) => {
    const m = ROUTE.exec(req.url ?? '');
    if (!m || req.method !== 'POST') return answer(res, 404, { error: { code: 'not_found' } });
    const presented = req.headers['x-webhook-secret'];
    if (typeof presented !== 'string') return answer(res, 400, { error: { code: 'missing_secret' } });
    const p = Buffer.from(presented, 'utf8');
    if (p.length !== secret.length || !timingSafeEqual(p, secret)) return answer(res, 400, { error: { code: 'invalid_secret' } });
    const ct = req.headers['content-type'];
    if (ct !== undefined && ct !== 'application/json' && !ct.startsWith('application/json;')) {
      return answer(res, 400, { error: { code: 'unsupported_content_type' } });
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return answer(res, 400, { error: { code: 'invalid_json' } });
      }
      if (body === null || typeof body !== 'object' || Array.isArray(body)) return answer(res, 400, { error: { code: 'body_not_object' } });
      const executionId = randomUUID();
      const job = { v: 1, executionId, workflowId: m[1], workspace: 'bench', receivedAt: new Date().toISOString(), trigger: { body, query: {} } };
      if (!js) return answer(res, 202, { executionId });
      js.publish(subject, JSON.stringify(job), { msgID: executionId }).then(
        () => answer(res, 202, { executionId }),
        (err: Error) => answer(res, 503, { error: { code: 'queue_unavailable', message: err.message } }),
      );
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await nc?.close();
    },
  };
}

// --------------------------------------------------------------------------------------------- gateway

async function startRealGateway(): Promise<Running> {
  const config = loadGatewayConfig(process.env);
  const log = createLogger('gateway', process.env.LDBOX_LOG_LEVEL ?? 'info');
  const gateway = await startGateway(config, log);
  const deadline = Date.now() + 30_000;
  while (!gateway.ready()) {
    if (Date.now() > deadline) throw new Error('the gateway was not ready within 30 s');
    await new Promise((r) => setTimeout(r, 25));
  }
  return { port: gateway.port, close: () => gateway.close(2000) };
}

// ------------------------------------------------------------------------------------------------ main

async function main(): Promise<void> {
  const running = kind === 'gateway' ? await startRealGateway() : await startMinimal(kind === 'reference');
  process.on('message', (msg: { type: string; id?: number }) => {
    if (msg.type === 'cpu') {
      const u = process.cpuUsage();
      send({ type: 'cpu', id: msg.id, user: u.user, system: u.system });
    } else if (msg.type === 'stop') {
      const hard = setTimeout(() => process.exit(0), 5000);
      hard.unref();
      running.close().then(
        () => process.exit(0),
        () => process.exit(0),
      );
    }
  });
  process.on('disconnect', () => process.exit(0));
  send({ type: 'ready', port: running.port });
}

main().catch((err: unknown) => {
  console.error(`webhook-server ${kind} failed:`, err);
  process.exit(1);
});
