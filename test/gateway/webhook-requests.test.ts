/**
 * The webhook route's answers and what it queues (spec: ordered handling, Errors; docs/design.md body formats,
 * repeated query parameters, Idempotency-Key, 429): every status of the table except the NATS outage
 * (gateway-outage.test.ts), the job read back from the stream, exact bodies.
 */
import http from 'node:http';
import t from 'tap';
import { Kvm } from '@nats-io/kv';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { ChargeLedger } from '../../src/store/charge-ledger.js';
import { newExecutionId } from '../../src/workflows/ids.js';
import { WorkspaceRepository, WORKSPACES_BUCKET, nextMonthStart } from '../../src/store/workspace-repository.js';
import { testClient, waitFor } from '../nats/util.js';
import { createWorkflow, gatewayFixture, hook, jobsOf, rpc } from './harness.js';

const LIMIT = 64 * 1024;

/** A raw request: the answer arrives while the body is (not) sent; `closed` tells whether the server hung up. */
function rawPost(
  port: number,
  path: string,
  headers: Record<string, string>,
  send: (req: http.ClientRequest) => void,
): Promise<{ status: number; body: string; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', headers, agent: false });
    req.on('error', (err) => reject(err));
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => {
        const closed = res.headers.connection === 'close';
        resolve({ status: res.statusCode ?? 0, body, closed });
        req.destroy();
      });
    });
    send(req);
  });
}

t.test('webhook requests', async (t) => {
  const { base, nats, gateway } = await gatewayFixture(t);
  const wf = await createWorkflow(base, { authMethod: 'AUTH_METHOD_QUERY_PARAMETER' });
  const secret: string = wf.webhook.secret;
  const q = (extra = '') => `secret=${secret}${extra}`;

  await t.test('405 for other methods, with Allow: POST', async (t) => {
    for (const method of ['GET', 'PUT', 'DELETE', 'PATCH']) {
      const r = await hook(base, wf.id, { method, query: q() });
      t.equal(r.status, 405, method);
      t.equal(r.headers.get('allow'), 'POST');
      t.same(r.json, { error: { code: 'method_not_allowed', message: `method ${method} is not allowed: webhooks accept POST` } });
    }
  });

  await t.test('400 for a malformed id, before any lookup; 404 for an unknown one', async (t) => {
    for (const id of ['nope', 'wf_short', wf.id.toUpperCase(), `${wf.id}x`, `${wf.id}/x`, '']) {
      const r = await hook(base, id, { body: {} });
      t.equal(r.status, 400, JSON.stringify(id));
      t.equal(r.json.error.code, 'invalid_workflow_id');
    }
    t.same((await hook(base, 'nope', {})).json.error.message, '"nope" is not a workflow id (wf_ and 20 characters of 0-9 a-z)');
    const unknown = 'wf_' + '0'.repeat(20);
    const r = await hook(base, unknown, { body: {} });
    t.equal(r.status, 404);
    t.same(r.json, { error: { code: 'workflow_not_found', message: `workflow ${unknown} does not exist` } });
    const other = await hook(base, '', { body: {} });
    t.equal(other.status, 400);
    const route = await fetch(`${base}/nothing/here`);
    t.equal(route.status, 404);
    t.same(await route.json(), { error: { code: 'not_found', message: 'no such route' } });
  });

  await t.test('body and query reach the job exactly; secret removed; repeated parameters are arrays', async (t) => {
    const body = { x: 1, nested: { list: [1, 'two', null, true], s: 'é ✓ 😀' }, empty: {} };
    const r = await hook(base, wf.id, { query: q('&a=1&b=x%20y&a=2&a=3&flag&__proto__=p'), body });
    t.equal(r.status, 202);
    const jobs = await jobsOf(t, nats.url, wf.id);
    t.equal(jobs.length, 1);
    const { msgID, job } = jobs[0]!;
    t.equal(msgID, r.json.executionId, 'Nats-Msg-Id is the execution id');
    t.same(Object.keys(job).sort(), ['executionId', 'receivedAt', 'trigger', 'v', 'workflowId', 'workspace']);
    t.equal(job.v, 1);
    t.equal(job.executionId, r.json.executionId);
    t.equal(job.workflowId, wf.id);
    t.equal(job.workspace, 'ws');
    t.strictSame(job.trigger.body, body);
    t.equal(JSON.stringify(job.trigger.query), '{"a":["1","2","3"],"b":"x y","flag":"","__proto__":"p"}', '__proto__ is a plain key');
    t.notMatch(JSON.stringify(job), secret, 'the secret appears nowhere in the job');
  });

  await t.test('body formats', async (t) => {
    const w = await createWorkflow(base, { authMethod: 'AUTH_METHOD_NONE' });
    const ok = async (headers: Record<string, string>, body: string, expect: unknown, what: string) => {
      const r = await hook(base, w.id, { headers, body });
      t.equal(r.status, 202, what);
      const jobs = await jobsOf(t, nats.url, w.id);
      t.strictSame(jobs.at(-1)!.job.trigger.body, expect, what);
    };
    await ok({ 'content-type': 'application/json; charset=utf-8' }, '{"a":[1]}', { a: [1] }, 'application/json with charset');
    await ok({ 'content-type': 'application/vnd.api+json' }, '{"b":2}', { b: 2 }, 'application/*+json');
    await ok({}, '{"c":3}', { c: 3 }, 'no Content-Type: JSON');
    await ok({ 'content-type': 'application/json' }, '', {}, 'empty body is {}');
    await ok({ 'content-type': 'application/x-www-form-urlencoded' }, 'a=1&a=2&b=%F0%9F%98%80&c=x+y', { a: ['1', '2'], b: '😀', c: 'x y' }, 'form');

    const bad = async (headers: Record<string, string>, body: string, code: string, message: string) => {
      const r = await hook(base, w.id, { headers, body });
      t.equal(r.status, 400, code);
      t.same(r.json, { error: { code, message } });
    };
    await ok({ 'content-type': 'application/json' }, '[{"email":"a@example.com"},2]', [{ email: 'a@example.com' }, 2], 'a JSON array (SendGrid)');
    await ok({ 'content-type': 'text/plain; charset=utf-8' }, 'hi {{there}} 😀\n', 'hi {{there}} 😀\n', 'text/plain: the text');
    await bad(
      { 'content-type': 'application/xml' },
      '<a/>',
      'unsupported_content_type',
      'unsupported Content-Type "application/xml": send JSON (application/json), a form (application/x-www-form-urlencoded) or text (text/plain)',
    );
    await bad(
      { 'content-type': 'application/json' },
      '"s"',
      'body_not_object',
      'request body must be a JSON object or array, got a string: send text as text/plain',
    );
    await bad(
      { 'content-type': 'application/json' },
      'null',
      'body_not_object',
      'request body must be a JSON object or array, got null: send text as text/plain',
    );
    await bad(
      { 'content-type': 'application/json' },
      '12',
      'body_not_object',
      'request body must be a JSON object or array, got a number: send text as text/plain',
    );
    const invalid = await hook(base, w.id, { headers: { 'content-type': 'application/json' }, body: '{"a":' });
    t.equal(invalid.status, 400);
    t.equal(invalid.json.error.code, 'invalid_json');
    t.match(invalid.json.error.message, /^request body is not valid JSON: /);
    t.equal((await jobsOf(t, nats.url, w.id)).length, 7, 'refused bodies queue nothing');
  });

  await t.test('413 for an oversized body, without reading it all', async (t) => {
    const path = `/api/hooks/workflows/${wf.id}?${q()}`;
    // Content-Length over the limit: the answer comes before any body byte is sent.
    const declared = await rawPost(gateway.port, path, { 'content-type': 'application/json', 'content-length': String(LIMIT * 100) }, (req) =>
      req.flushHeaders(),
    );
    t.equal(declared.status, 413);
    t.same(JSON.parse(declared.body), {
      error: { code: 'payload_too_large', message: `request body of ${LIMIT * 100} bytes is over the limit of ${LIMIT} bytes` },
    });
    t.equal(declared.closed, true, 'Connection: close (the rest is not read)');
    // Chunked: refused once past the limit, while the client is still sending.
    const chunk = Buffer.alloc(16 * 1024, 0x20);
    const chunked = await rawPost(gateway.port, path, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }, (req) => {
      let sent = 0;
      const pump = () => {
        while (sent < 10 * LIMIT && !req.destroyed) {
          sent += chunk.length;
          if (!req.write(chunk)) return void req.once('drain', pump);
        }
      };
      req.write('{"a":"');
      pump();
    });
    t.equal(chunked.status, 413);
    t.same(JSON.parse(chunked.body), { error: { code: 'payload_too_large', message: `request body is over the limit of ${LIMIT} bytes` } });
    // Exactly at the limit is fine.
    const atLimit = '{"p":"' + 'x'.repeat(LIMIT - 8) + '"}';
    t.equal(Buffer.byteLength(atLimit), LIMIT);
    t.equal((await hook(base, wf.id, { query: q(), body: atLimit, headers: { 'content-type': 'application/json' } })).status, 202);
  });

  await t.test('Idempotency-Key: a retry gets the first execution id and queues nothing', async (t) => {
    const w = await createWorkflow(base, { authMethod: 'AUTH_METHOD_NONE' });
    const first = await hook(base, w.id, { headers: { 'idempotency-key': 'delivery-1' }, body: { n: 1 } });
    t.equal(first.status, 202);
    const again = await hook(base, w.id, { headers: { 'idempotency-key': 'delivery-1' }, body: { n: 1 } });
    t.same(again.json, first.json, 'same execution id');
    const other = await hook(base, w.id, { headers: { 'idempotency-key': 'delivery-2' }, body: { n: 2 } });
    t.equal(other.status, 202);
    t.not(other.json.executionId, first.json.executionId);
    // Concurrent retries of one delivery: one winner, all answered with its id.
    const burst = await Promise.all(Array.from({ length: 8 }, () => hook(base, w.id, { headers: { 'idempotency-key': 'delivery-3' }, body: { n: 3 } })));
    t.same(new Set(burst.map((r) => r.status)), new Set([202]));
    t.equal(new Set(burst.map((r) => r.json.executionId)).size, 1, 'one execution id for the burst');
    const jobs = await jobsOf(t, nats.url, w.id);
    t.same(
      jobs.map((j) => j.job.trigger.body.n),
      [1, 2, 3],
      'one job per key',
    );
    t.same(
      jobs.map((j) => j.job.executionId),
      [first.json.executionId, other.json.executionId, burst[0]!.json.executionId],
    );

    const bad = await hook(base, w.id, { headers: { 'idempotency-key': 'k'.repeat(256) }, body: {} });
    t.equal(bad.status, 400);
    t.same(bad.json, { error: { code: 'invalid_idempotency_key', message: 'Idempotency-Key must be sent once, with 1 to 255 printable ASCII characters' } });
  });

  await t.test('429 from the workflow rate limit, with Retry-After', async (t) => {
    const w = await createWorkflow(base, { authMethod: 'AUTH_METHOD_NONE', rateLimitPerSecond: 2 });
    const rs = [];
    for (let i = 0; i < 3; i++) rs.push(await hook(base, w.id, { body: {} }));
    t.same(
      rs.map((r) => r.status),
      [202, 202, 429],
    );
    t.equal(rs[2]!.headers.get('retry-after'), '1');
    t.same(rs[2]!.json, { error: { code: 'rate_limited', message: `workflow ${w.id} is limited to 2 requests per second` } });
    t.equal((await jobsOf(t, nats.url, w.id)).length, 2);
    await new Promise((r) => setTimeout(r, 600));
    t.equal((await hook(base, w.id, { body: {} })).status, 202, 'a token again after 1/rate s');
  });

  await t.test('429 from the spending cap, Retry-After until the next month', async (t) => {
    const w = await createWorkflow(base, { authMethod: 'AUTH_METHOD_NONE', workspace: 'capped' });
    const set = await rpc(base, 'SetWorkspaceBudget', { name: 'capped', monthlyBudgetUnits: '10' }, { service: 'ldbox.workflows.v1.WorkspaceService' });
    t.equal(set.status, 200);
    t.match(set.json.workspace, { name: 'capped', monthlyBudgetUnits: '10' });
    t.equal((await hook(base, w.id, { body: {} })).status, 202, 'under budget');
    // The executor charges runs and rolls the charges up; charge the whole budget as it would.
    const client = testClient(t, nats.url);
    const nc = await client.whenConnected();
    const kv = await new Kvm(jetstream(nc)).open(WORKSPACES_BUCKET);
    const ledger = new ChargeLedger(jetstream(nc), await jetstreamManager(nc), kv);
    const repo = new WorkspaceRepository(kv, ledger);
    t.equal(await ledger.charge({ workspace: 'capped', executionId: newExecutionId(new Date()), units: 10, at: new Date().toISOString() }), 'charged');
    t.equal(await ledger.rollUp(async (ws, charges, end) => void (await repo.fold(ws, charges, end, new Date()))), 1, 'one charge rolled up');
    await waitFor(async () => (await hook(base, w.id, { body: {} })).status === 429, 3000, 'cap seen by the gateway');
    const r = await hook(base, w.id, { body: {} });
    t.equal(r.status, 429);
    t.same(r.json, {
      error: { code: 'spending_cap_reached', message: 'workspace capped has spent its monthly budget: webhooks are refused until the next month (UTC)' },
    });
    const want = Math.ceil((nextMonthStart(new Date()).getTime() - Date.now()) / 1000);
    const got = Number(r.headers.get('retry-after'));
    t.ok(Math.abs(got - want) <= 2, `Retry-After ${got} s ≈ ${want} s to the next month`);
    const get = await rpc(base, 'GetWorkspace', { name: 'capped' }, { service: 'ldbox.workflows.v1.WorkspaceService' });
    t.match(get.json.workspace, { name: 'capped', monthlyBudgetUnits: '10', spentUnits: '10' });
    await rpc(base, 'SetWorkspaceBudget', { name: 'capped', monthlyBudgetUnits: '0' }, { service: 'ldbox.workflows.v1.WorkspaceService' });
    await waitFor(async () => (await hook(base, w.id, { body: {} })).status === 202, 3000, 'cap removed');
  });

  await t.test('a deleted workflow answers 404', async (t) => {
    const w = await createWorkflow(base, { authMethod: 'AUTH_METHOD_NONE' });
    t.equal((await hook(base, w.id, {})).status, 202);
    t.equal((await rpc(base, 'DeleteWorkflow', { id: w.id })).status, 200);
    t.equal((await hook(base, w.id, {})).status, 404, 'at once: DeleteWorkflow waits for this gateway’s cache');
  });
});
