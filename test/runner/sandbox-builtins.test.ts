/**
 * The sandbox's globals and built-ins through a real runner (spec "Integration code data object" and
 * "Utilities"): every case runs through the canonical grpc-js client and the Connect client, which must
 * agree.
 */
import { type JsonValue, toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import t from 'tap';
import { ErrorKind, type ExecuteResponse, LogLevel } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { type ExecuteInit, startTestRunner, type TestRunner } from '../helpers/runner-harness.js';

interface Outcome {
  result: JsonValue | undefined;
  logs: { level: LogLevel; message: string }[];
  error: { kind: ErrorKind; name: string; message: string; stack: string } | undefined;
}

function outcome(res: ExecuteResponse): Outcome {
  return {
    result: res.result === undefined ? undefined : toJson(ValueSchema, res.result),
    logs: res.logs.map((l) => ({ level: l.level, message: l.message })),
    error: res.error && { kind: res.error.kind, name: res.error.name, message: res.error.message, stack: res.error.stack },
  };
}

const runner = await startTestRunner();
t.teardown(() => runner.close());

/** Runs `req` through both clients, checks that they agree, and returns the outcome. */
async function run(t: Tap.Test, req: ExecuteInit | string, on: TestRunner = runner): Promise<Outcome> {
  const init: ExecuteInit = typeof req === 'string' ? { code: req } : req;
  const [viaGrpc, viaConnect] = await Promise.all([on.grpc.execute(init), on.connect.execute(init)]);
  const a = outcome(viaGrpc);
  t.same(outcome(viaConnect), a, 'grpc-js and Connect clients get the same outcome');
  return a;
}

/** Runs code that must return a value without error; returns the value. */
async function value(t: Tap.Test, req: ExecuteInit | string): Promise<JsonValue | undefined> {
  const o = await run(t, req);
  t.equal(o.error, undefined, 'no error');
  return o.result;
}

const info = (message: string) => ({ level: LogLevel.INFO, message });

t.test('data.input and data.auth arrive', async (t) => {
  const input = { a: 1, s: 'x', nested: { list: [1, 'two', null, true] } };
  const result = await value(t, {
    code: 'return {input: data.input, authKeys: Object.keys(data.auth), token: data.auth.token === "tok-12345678"}',
    input,
    auth: { token: 'tok-12345678', user: 'alice' },
  });
  t.same(result, { input, authKeys: ['token', 'user'], token: true });
  t.same(await value(t, 'return data'), { input: {}, auth: {} }, 'unset input and auth are {}');
});

t.test('the returned value is awaited', async (t) => {
  t.equal(await value(t, 'return Promise.resolve(5)'), 5, 'a resolved promise');
  t.same(await value(t, 'return new Promise((resolve) => resolve({ok: true}))'), { ok: true }, 'a new Promise');
  t.equal(await value(t, 'return (async () => { await ld.wait(1); return "later"; })()'), 'later', 'a promise settled by host work');
  const o = await run(t, 'return Promise.reject(new RangeError("no"))');
  t.same(
    { kind: o.error?.kind, name: o.error?.name, message: o.error?.message },
    { kind: ErrorKind.THROWN, name: 'RangeError', message: 'no' },
    'a rejected promise is THROWN',
  );
});

t.test('strict mode', async (t) => {
  t.equal(await value(t, 'return (function () { return this; })()'), null, '`this` of a plain call is undefined');
  const o = await run(t, 'undeclared = 1;\nreturn undeclared');
  t.same(
    { kind: o.error?.kind, name: o.error?.name, message: o.error?.message },
    { kind: ErrorKind.THROWN, name: 'ReferenceError', message: "'undeclared' is not defined" },
    'assigning an undeclared variable throws',
  );
});

t.test('no eval, process, require or code from strings', async (t) => {
  t.same(
    await value(t, 'return [typeof eval, typeof globalThis.eval, typeof process, typeof require, typeof module, typeof import.meta]'),
    null,
    'import.meta is a syntax error outside modules, checked below',
  ).catch?.(() => undefined);
});
