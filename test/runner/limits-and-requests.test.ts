/**
 * Request checks and per-call limits through a real runner (runner.proto ExecuteRequest and Limits,
 * runner/wire/execute-request.ts): every refusal is INVALID_ARGUMENT with a message naming the field
 * and the limit; timeouts and memory stops are normal responses with a typed error; the bearer token
 * guards RunnerService but not health checks.
 */
import { create, fromBinary, toBinary, toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import { Code } from '@connectrpc/connect';
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import {
  type HealthCheckResponse,
  HealthCheckRequestSchema,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from '../../src/gen/grpc/health/v1/health_pb.js';
import { ErrorKind, type ExecuteResponse, type ResultKind } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { type ExecuteInit, startTestRunner, type TestRunner, connectError, grpcError } from '../helpers/runner-harness.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

const MiB = 1024 * 1024;

const runner = await startTestRunner({
  LDBOX_MAX_CODE_BYTES: '2048',
  LDBOX_MAX_TIMEOUT_MS: '5000',
  LDBOX_MAX_MEMORY_MB: '64',
  LDBOX_MAX_INPUT_BYTES: '1024',
});
t.teardown(() => runner.close());

/** Asserts that `req` is refused with INVALID_ARGUMENT and `message`, through both clients. */
async function refused(t: Test, req: ExecuteInit, message: string, what = '', on: TestRunner = runner): Promise<void> {
  const [g, c] = await Promise.all([grpcError(on.grpc.execute(req)), connectError(on.connect.execute(req))]);
  const prefix = what ? `${what}: ` : '';
  t.equal(g?.code, grpc.status.INVALID_ARGUMENT, `${prefix}grpc-js: INVALID_ARGUMENT (3)`);
  t.equal(c?.code, Code.InvalidArgument, `${prefix}Connect: InvalidArgument`);
  t.equal(c?.rawMessage, message, `${prefix}the message`);
}

/** Runs `req` through grpc-js, which must accept it. */
async function accepted(t: Test, req: ExecuteInit, on: TestRunner = runner): Promise<ExecuteResponse | undefined> {
  try {
    return await on.grpc.execute(req);
  } catch (err) {
    const e = err as grpc.ServiceError;
    t.fail(`refused with ${e.code}: ${e.details}`);
    return undefined;
  }
}

t.test('empty code', async (t) => {
  const message = 'code is empty: send a JavaScript body that ends with `return`';
  await refused(t, { code: '' }, message);
  await refused(t, { code: ' \n\t ' }, message, 'blank code too');
});

t.test('code over LDBOX_MAX_CODE_BYTES', async (t) => {
  const code = `return ${JSON.stringify('é'.repeat(1100))}`; // 1109 characters, 2209 bytes of UTF-8
  t.equal(Buffer.byteLength(code), 2209, 'the code is 2209 bytes');
  await refused(t, { code }, 'code is 2209 bytes, over the limit of 2048 bytes');
  const fits = `return ${JSON.stringify('x'.repeat(2048 - 9))}`;
  t.equal(Buffer.byteLength(fits), 2048, 'this code is 2048 bytes');
  const res = await accepted(t, { code: fits });
  t.equal(res?.result && (toJson(ValueSchema, res.result) as string).length, 2039, 'exactly at the limit runs');
});

t.test('limits.timeoutMs above the maximum', async (t) => {
  await refused(t, { code: 'return 1', limits: { timeoutMs: 5001 } }, 'limits.timeoutMs must be at most 5000, got 5001');
  await refused(t, { code: 'return 1', limits: { timeoutMs: 4_000_000_000 } }, 'limits.timeoutMs must be at most 5000, got 4000000000');
  const res = await accepted(t, { code: 'return 1', limits: { timeoutMs: 5000 } });
  t.equal(res?.error, undefined, 'the maximum itself is allowed');
});

t.test('limits.memoryBytes outside 4 MiB .. the maximum', async (t) => {
  await refused(t, { code: 'return 1', limits: { memoryBytes: BigInt(64 * MiB + 1) } }, 'limits.memoryBytes must be at most 67108864, got 67108865');
  await refused(t, { code: 'return 1', limits: { memoryBytes: BigInt(4 * MiB - 1) } }, 'limits.memoryBytes must be at least 4194304, got 4194303');
  await refused(t, { code: 'return 1', limits: { memoryBytes: 1n } }, 'limits.memoryBytes must be at least 4194304, got 1');
  for (const memoryBytes of [BigInt(4 * MiB), BigInt(64 * MiB)]) {
    const res = await accepted(t, { code: 'return 1', limits: { memoryBytes } });
    t.same(res?.result && toJson(ValueSchema, res.result), 1, `${memoryBytes} bytes is allowed and runs`);
  }
});

t.test('an unknown resultKind', async (t) => {
  await refused(t, { code: 'return 1', resultKind: 99 as ResultKind }, 'resultKind 99 is not a known ResultKind');
});

t.test('requestId', async (t) => {
  const message = 'requestId must be 1 to 128 characters of A-Z a-z 0-9 . _ : -';
  await refused(t, { code: 'return 1', requestId: 'a b' }, message);
  await refused(t, { code: 'return 1', requestId: 'x'.repeat(129) }, message, 'too long');
  await refused(t, { code: 'return 1', requestId: 'id/1' }, message, 'a slash');
  for (const requestId of ['req-1.2_3:4', 'x'.repeat(128)]) {
    const [g, c] = await Promise.all([runner.grpc.execute({ code: 'return 1', requestId }), runner.connect.execute({ code: 'return 1', requestId })]);
    t.same([g.requestId, c.requestId], [requestId, requestId], `${requestId.slice(0, 20)} is echoed`);
  }
  const a = await runner.grpc.execute({ code: 'return 1' });
  const b = await runner.grpc.execute({ code: 'return 1', requestId: '' });
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
  t.match(a.requestId, uuid, 'an empty id gets a generated UUID');
  t.match(b.requestId, uuid);
  t.not(a.requestId, b.requestId, 'a new one per call');
});

t.test('tenant', async (t) => {
  const message = 'tenant must be 1 to 128 characters of A-Z a-z 0-9 . _ : -';
  await refused(t, { code: 'return 1', tenant: 'acme corp' }, message, 'a space');
  await refused(t, { code: 'return 1', tenant: 'x'.repeat(129) }, message, 'too long');
  await refused(t, { code: 'return 1', tenant: 'acme\u0000' }, message, 'a NUL');
  for (const tenant of ['', 'acme.prod', 'x'.repeat(128)]) {
    const res = await accepted(t, { code: 'return 1', tenant });
    t.same(res?.result && toJson(ValueSchema, res.result), 1, `tenant ${JSON.stringify(tenant.slice(0, 20))} runs`);
  }
});

t.test('input + auth over LDBOX_MAX_INPUT_BYTES', async (t) => {
  const input = { s: 'x'.repeat(600) };
  const auth = { t: 'y'.repeat(600) };
  const size = Buffer.byteLength(JSON.stringify({ input, auth }));
  await refused(t, { code: 'return 1', input, auth }, `input and auth are ${size} bytes of JSON, over the limit of 1024 bytes`);
  const res = await accepted(t, { code: 'return data.input.s.length', input: { s: 'x'.repeat(900) } });
  t.same(res?.result && toJson(ValueSchema, res.result), 900, 'under the limit runs');
  // The limit is in bytes: 600 × "é" is 600 characters but 1200 bytes of UTF-8 JSON.
  const wide = { s: 'é'.repeat(600) };
  const wideSize = Buffer.byteLength(JSON.stringify({ input: wide, auth: {} }));
  t.equal(wideSize, 1228, 'the wide input is 1228 bytes of JSON');
  await refused(t, { code: 'return 1', input: wide }, `input and auth are ${wideSize} bytes of JSON, over the limit of 1024 bytes`, 'counted in bytes');
});

t.test('grpc-js clients read the status message as sent', async (t) => {
  // grpc-message is percent-encoded on the wire; the canonical client must get the text back.
  const empty = await grpcError(runner.grpc.execute({ code: '' }));
  t.equal(empty?.details, 'code is empty: send a JavaScript body that ends with `return`', 'a colon in the message');
  const timeout = await grpcError(runner.grpc.execute({ code: 'return 1', limits: { timeoutMs: 5001 } }));
  t.equal(timeout?.details, 'limits.timeoutMs must be at most 5000, got 5001', 'a comma in the message');
});

t.test('the timeout limit is honoured', async (t) => {
  const started = performance.now();
  const res = await runner.grpc.execute({ code: 'while (true) {}', limits: { timeoutMs: 300 } });
  const took = performance.now() - started;
  t.same(res.error && { kind: res.error.kind, name: res.error.name, message: res.error.message, stack: res.error.stack }, {
    kind: ErrorKind.TIMEOUT,
    name: 'TimeoutError',
    message: 'the code ran longer than its 300 ms limit',
    stack: '',
  });
  t.equal(res.result, undefined, 'no result');
  t.ok(took >= 280 && took < 3000, `ended after about 300 ms (${Math.round(took)} ms)`);

  const waiting = await runner.grpc.execute({ code: 'await ld.wait(10000);\nreturn 1', limits: { timeoutMs: 300 } });
  t.same(
    waiting.error && { kind: waiting.error.kind, name: waiting.error.name },
    { kind: ErrorKind.TIMEOUT, name: 'TimeoutError' },
    'time spent awaiting host work counts too',
  );
  const caught = await runner.grpc.execute({ code: 'try { while (true) {} } catch (e) { return "caught"; }', limits: { timeoutMs: 300 } });
  t.equal(caught.error?.kind, ErrorKind.TIMEOUT, 'user code cannot catch the timeout');
  const next = await runner.grpc.execute({ code: 'return "still fine"' });
  t.same(next.result && toJson(ValueSchema, next.result), 'still fine', 'the next call works');
});

t.test('the memory limit is honoured', async (t) => {
  const res = await runner.grpc.execute({
    code: 'const a = [];\nfor (let i = 0; i < 1000; i++) a.push("x".repeat(1024 * 1024) + i);\nreturn a.length',
    limits: { memoryBytes: BigInt(32 * MiB), timeoutMs: 5000 },
  });
  t.same(res.error && { kind: res.error.kind, name: res.error.name, message: res.error.message }, {
    kind: ErrorKind.MEMORY_LIMIT,
    name: 'MemoryLimitError',
    message: 'the code used more than its 32 MiB memory limit',
  });
  t.equal(res.result, undefined, 'no result');
  const next = await runner.grpc.execute({ code: 'return [1, 2, 3].length' });
  t.same([next.error, next.result && toJson(ValueSchema, next.result)], [undefined, 3], 'the next call works');
  const status = await runner.grpc.getPoolStatus();
  t.equal(status.workers, 2, 'no worker was lost');
});

t.test('stats', async (t) => {
  const res = await runner.grpc.execute({ code: 'await ld.wait(20);\nreturn 1' });
  const stats = res.stats;
  t.ok(stats !== undefined, 'stats are set');
  t.ok((stats?.wallTimeMs ?? 0) >= 15, `wallTimeMs covers the wait (${stats?.wallTimeMs})`);
  t.ok((stats?.memoryUsedBytes ?? 0n) > 0n, `memoryUsedBytes > 0 (${stats?.memoryUsedBytes})`);
  t.ok((stats?.queueTimeMs ?? -1) >= 0, 'queueTimeMs >= 0');
  const failed = await runner.grpc.execute({ code: 'throw new Error("x")' });
  t.ok((failed.stats?.wallTimeMs ?? 0) > 0, 'stats are set on a user-code error too');
  t.ok((failed.stats?.memoryUsedBytes ?? 0n) > 0n);
});

t.test('bearer token', async (t) => {
  const token = 'x'.repeat(32);
  const guarded = await startTestRunner({ LDBOX_RUNNER_TOKEN: token });
  t.teardown(() => guarded.close());
  const withAuth = (value: string) => {
    const md = new grpc.Metadata();
    md.set('authorization', value);
    return md;
  };
  const message = 'missing or wrong runner token (Authorization: Bearer <LDBOX_RUNNER_TOKEN>)';

  t.equal((await grpcError(guarded.grpc.execute({ code: 'return 1' })))?.code, grpc.status.UNAUTHENTICATED, 'no header: UNAUTHENTICATED (16)');
  t.equal(
    (await grpcError(guarded.grpc.execute({ code: 'return 1' }, { metadata: withAuth(`Bearer ${'y'.repeat(32)}`) })))?.code,
    grpc.status.UNAUTHENTICATED,
    'a wrong token: 16',
  );
  t.equal(
    (await grpcError(guarded.grpc.execute({ code: 'return 1' }, { metadata: withAuth(token) })))?.code,
    grpc.status.UNAUTHENTICATED,
    'the token without the Bearer scheme: 16',
  );
  t.equal((await grpcError(guarded.grpc.getPoolStatus()))?.code, grpc.status.UNAUTHENTICATED, 'GetPoolStatus needs the token too');
  const res = await guarded.grpc.execute({ code: 'return 1' }, { metadata: withAuth(`Bearer ${token}`) });
  t.same(res.result && toJson(ValueSchema, res.result), 1, 'Authorization: Bearer <token> is let through');
  t.equal((await guarded.grpc.getPoolStatus(withAuth(`Bearer ${token}`))).workers, 2, 'GetPoolStatus with the token');

  const c = await connectError(guarded.connect.execute({ code: 'return 1' }));
  t.same([c?.code, c?.rawMessage], [Code.Unauthenticated, message], 'Connect: Unauthenticated with the message');
  const viaConnect = await guarded.connect.execute({ code: 'return 2' }, { headers: { authorization: `Bearer ${token}` } });
  t.same(viaConnect.result && toJson(ValueSchema, viaConnect.result), 2, 'Connect with the token');

  const check = (service: string) =>
    new Promise<HealthCheckResponse>((resolve, reject) => {
      guarded.grpc.raw.makeUnaryRequest(
        '/grpc.health.v1.Health/Check',
        (m: ReturnType<typeof create<typeof HealthCheckRequestSchema>>) => Buffer.from(toBinary(HealthCheckRequestSchema, m)),
        (b: Buffer) => fromBinary(HealthCheckResponseSchema, b),
        create(HealthCheckRequestSchema, { service }),
        new grpc.Metadata(),
        {},
        (err, res) => (err ? reject(err) : resolve(res!)),
      );
    });
  t.equal((await check('')).status, ServingStatus.SERVING, 'health Check needs no token');
  t.equal((await check('ldbox.runner.v1.RunnerService')).status, ServingStatus.SERVING, 'for the runner service too');
});

t.test('LDBOX_SANDBOX_STACK bounds how deep user code recurses', async (t) => {
  const small = await startTestRunner({ LDBOX_POOL_SIZE: '1', LDBOX_SANDBOX_STACK: '256KiB' });
  t.teardown(() => small.close());
  const code = 'let depth = 0;\nfunction down(n) { depth = n; return down(n + 1) + 1; }\ntry { down(0); } catch (e) { return [depth, String(e)]; }';
  const depthOn = async (on: TestRunner) => toJson(ValueSchema, (await on.grpc.execute({ code })).result!) as [number, string];
  const [deep, deepError] = await depthOn(runner);
  const [shallow, shallowError] = await depthOn(small);
  t.equal(deepError, 'InternalError: stack overflow', 'the default 1 MiB stack: a catchable stack overflow');
  t.equal(shallowError, 'InternalError: stack overflow', '256 KiB: the same error');
  t.ok(deep > 4000, `1 MiB: ${deep} calls deep`);
  t.ok(shallow > 1000 && shallow < deep / 3, `256 KiB: ${shallow} calls deep`);
  t.equal(toJson(ValueSchema, (await small.grpc.execute({ code: 'return Math.max(1, 2)' })).result!), 2, 'the worker serves on');
});
