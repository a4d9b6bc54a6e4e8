/**
 * A gateway on a random loopback port against a real nats-server, plus small clients: Connect JSON calls
 * like curl's, raw webhook POSTs, and a reader of the jobs in the JOBS stream (an explicit-ack consumer
 * filtered on one workflow's subject, deleted after the read: the jobs stay queued).
 */
import type { Test } from 'tap';
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { type Gateway, startGateway } from '../../gateway/index.js';
import { type GatewayConfig, loadGatewayConfig } from '../../gateway/gateway-config.js';
import { type Logger, silentLogger } from '../../src/logging/logger.js';
import { JOBS_STREAM, jobSubject } from '../../src/nats/streams.js';
import { startNatsServer, type NatsServerOptions, type TestNatsServer } from '../helpers/nats-server.js';
import { testClient, waitFor } from '../nats/util.js';
import { TEST_DATA_KEY } from '../helpers/data-keys.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

export interface GatewayFixture {
  nats: TestNatsServer;
  gateway: Gateway;
  config: GatewayConfig;
  base: string;
}

export interface GatewayFixtureOptions {
  /** NATS_* settings that depend on the server (its port): NATS_URL with credentials, NATS_CA, … */
  natsEnv?: (nats: TestNatsServer) => Record<string, string>;
  /** The gateway's logger (default: silent). */
  log?: Logger;
}

/** A nats-server and a ready gateway (webhook rate off and a 64 KiB body limit unless `env` says otherwise). */
export async function gatewayFixture(
  t: Test,
  env: Record<string, string> = {},
  natsOpts: NatsServerOptions = {},
  opts: GatewayFixtureOptions = {},
): Promise<GatewayFixture> {
  const nats = await startNatsServer(natsOpts);
  t.teardown(() => nats.stop());
  const config = loadGatewayConfig({
    LDBOX_GATEWAY_PORT: '0',
    LDBOX_ADMIN_TOKEN: ADMIN_TOKEN,
    NATS_URL: nats.url,
    LDBOX_WEBHOOK_RATE: '0',
    LDBOX_MAX_BODY_BYTES: String(64 * 1024),
    LDBOX_PUBLISH_TIMEOUT_MS: '1000',
    ...opts.natsEnv?.(nats),
    LDBOX_DATA_KEY: TEST_DATA_KEY,
    ...env,
  });
  const gateway = await startGateway(config, opts.log ?? silentLogger(), { nats: { reconnectTimeWaitMs: 100, reconnectJitterMs: 50, connectTimeoutMs: 1000 } });
  t.teardown(() => gateway.close(2000));
  await waitFor(() => gateway.ready(), 15_000, 'gateway ready');
  return { nats, gateway, config, base: `http://127.0.0.1:${gateway.port}` };
}

export interface Reply {
  status: number;
  headers: Headers;
  /** The parsed JSON body (undefined when the body is not JSON). */
  json: any;
  text: string;
}

async function reply(res: Response): Promise<Reply> {
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, json, text };
}

/** A Connect JSON call, as `curl -H 'content-type: application/json' -d '{...}'` makes it. */
export async function rpc(base: string, method: string, body: unknown, opts: { token?: string | null; service?: string } = {}): Promise<Reply> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const token = opts.token === undefined ? ADMIN_TOKEN : opts.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const service = opts.service ?? 'ldbox.workflows.v1.WorkflowService';
  return reply(await fetch(`${base}/${service}/${method}`, { method: 'POST', headers, body: JSON.stringify(body) }));
}

/** CreateWorkflow with one node; returns the workflow (JSON) including the one-time secret. */
export async function createWorkflow(base: string, opts: { authMethod?: string; workspace?: string; rateLimitPerSecond?: number } = {}): Promise<any> {
  const r = await rpc(base, 'CreateWorkflow', {
    name: 'test',
    workspace: opts.workspace ?? 'ws',
    nodes: [{ id: 'a', code: 'return data.input', input: { x: '{{trigger.output.body.x}}' } }],
    ...(opts.authMethod ? { webhook: { authMethod: opts.authMethod } } : {}),
    ...(opts.rateLimitPerSecond ? { rateLimitPerSecond: opts.rateLimitPerSecond } : {}),
  });
  if (r.status !== 200) throw new Error(`CreateWorkflow: ${r.status} ${r.text}`);
  return r.json.workflow;
}

/** A webhook call; `body` a string is sent as is, anything else as JSON. */
export async function hook(
  base: string,
  id: string,
  opts: { query?: string; body?: unknown; headers?: Record<string, string>; method?: string } = {},
): Promise<Reply> {
  const method = opts.method ?? 'POST';
  const headers: Record<string, string> = { ...opts.headers };
  // Bytes, not a string: fetch would add `content-type: text/plain` to a string body.
  let body: ArrayBuffer | undefined;
  if (opts.body !== undefined) {
    body = new TextEncoder().encode(typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body)).slice().buffer as ArrayBuffer;
    if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type') && typeof opts.body !== 'string') headers['content-type'] = 'application/json';
  }
  const url = `${base}/api/hooks/workflows/${id}${opts.query ? `?${opts.query}` : ''}`;
  return reply(await fetch(url, { method, headers, ...(body !== undefined && method !== 'GET' && method !== 'HEAD' ? { body } : {}) }));
}

export interface StoredJob {
  msgID: string | undefined;
  job: any;
}

/** Every job of `workflowId` now in the JOBS stream, in order, without consuming them. */
export async function jobsOf(t: Test, natsUrl: string, workflowId: string): Promise<StoredJob[]> {
  const client = testClient(t, natsUrl, 'ldbox-test-reader');
  const nc = await client.whenConnected();
  const jsm = await jetstreamManager(nc);
  const info = await jsm.consumers.add(JOBS_STREAM, {
    ack_policy: AckPolicy.Explicit,
    filter_subject: jobSubject(workflowId, '*'),
    inactive_threshold: 60_000_000_000,
  });
  try {
    const consumer = await jetstream(nc).consumers.get(JOBS_STREAM, info.name);
    const out: StoredJob[] = [];
    const msgs = await consumer.fetch({ max_messages: 1000, expires: 1000 });
    for await (const m of msgs) {
      out.push({ msgID: m.headers?.get('Nats-Msg-Id') || undefined, job: m.json() });
      if (m.info.pending === 0) break;
    }
    return out;
  } finally {
    await jsm.consumers.delete(JOBS_STREAM, info.name);
    await client.close(200);
  }
}
