/**
 * The sandbox's globals and built-ins through a real runner (spec "Integration code data object" and
 * "Utilities", runner.proto): every case runs through the canonical grpc-js client and the Connect
 * client, which must agree.
 */
import { type JsonValue, toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import t from 'tap';
import { ErrorKind, type ExecuteResponse, LogLevel } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { type ExecuteInit, startTestRunner, type TestRunner } from '../helpers/runner-harness.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

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
async function run(t: Test, req: ExecuteInit | string, on: TestRunner = runner): Promise<Outcome> {
  const init: ExecuteInit = typeof req === 'string' ? { code: req } : req;
  const [viaGrpc, viaConnect] = await Promise.all([on.grpc.execute(init), on.connect.execute(init)]);
  const a = outcome(viaGrpc);
  t.same(outcome(viaConnect), a, 'the grpc-js and Connect clients get the same outcome');
  return a;
}

/** Runs code that must succeed; returns its result. */
async function value(t: Test, req: ExecuteInit | string): Promise<JsonValue | undefined> {
  const o = await run(t, req);
  t.same(o.error, undefined, 'no error');
  return o.result;
}

/** Runs code that must fail; returns kind, name and message of the error. */
async function failure(t: Test, req: ExecuteInit | string): Promise<{ kind?: ErrorKind; name?: string; message?: string }> {
  const o = await run(t, req);
  t.equal(o.result, undefined, 'no result with an error');
  return { kind: o.error?.kind, name: o.error?.name, message: o.error?.message };
}

const info = (message: string) => ({ level: LogLevel.INFO, message });

t.test('data.input and data.auth arrive', async (t) => {
  const input = { a: 1, s: 'x', nested: { list: [1, 'two', null, true] } };
  t.same(
    await value(t, {
      code: 'return {input: data.input, authKeys: Object.keys(data.auth), token: data.auth.token === "tok-12345678"}',
      input,
      auth: { token: 'tok-12345678', user: 'alice' },
    }),
    { input, authKeys: ['token', 'user'], token: true },
  );
  t.same(await value(t, 'return data'), { input: {}, auth: {} }, 'unset input and auth are {}');
});

t.test('the returned value is awaited', async (t) => {
  t.equal(await value(t, 'return Promise.resolve(5)'), 5, 'a resolved promise');
  t.same(await value(t, 'return new Promise((resolve) => resolve({ok: true}))'), { ok: true }, 'a new Promise');
  t.equal(await value(t, 'return (async () => { await ld.wait(1); return "later"; })()'), 'later', 'settled after host work');
  t.same(
    await failure(t, 'return Promise.reject(new RangeError("no"))'),
    { kind: ErrorKind.THROWN, name: 'RangeError', message: 'no' },
    'a rejected promise is THROWN',
  );
});

t.test('strict mode', async (t) => {
  t.equal(await value(t, 'return typeof (function () { return this; })()'), 'undefined', '`this` of a plain call is undefined');
  t.same(
    await failure(t, 'undeclared = 1;\nreturn undeclared'),
    { kind: ErrorKind.THROWN, name: 'ReferenceError', message: "'undeclared' is not defined" },
    'assigning an undeclared variable throws',
  );
  t.same(
    await failure(t, 'const o = Object.freeze({a: 1});\no.a = 2;\nreturn o'),
    { kind: ErrorKind.THROWN, name: 'TypeError', message: "'a' is read-only" },
    'writing a read-only property throws instead of failing silently',
  );
});

t.test('no eval, process, require or code from strings', async (t) => {
  t.same(await value(t, 'return [typeof eval, typeof globalThis.eval, typeof process, typeof require, typeof module, typeof global]'), [
    'undefined',
    'undefined',
    'undefined',
    'undefined',
    'undefined',
    'undefined',
  ]);
  const noCode = { kind: ErrorKind.THROWN, name: 'TypeError', message: 'code generation from strings is disabled in the sandbox' };
  t.same(await failure(t, 'return new Function("return 1")()'), noCode, 'Function');
  t.same(await failure(t, 'return (async function () {}).constructor("return 1")()'), noCode, 'AsyncFunction');
  t.same(await failure(t, 'return (function* () {}).constructor("yield 1")().next()'), noCode, 'GeneratorFunction');
  t.same(
    await failure(t, 'return await import("fs")'),
    {
      kind: ErrorKind.THROWN,
      name: 'ReferenceError',
      message: "import('fs') is not available in the sandbox: there are no modules: the code is a function body, and the built-ins are on ld",
    },
    'no modules can be imported',
  );
});

t.test('JSON', async (t) => {
  t.same(await value(t, 'const s = JSON.stringify({a: [1, 2, {b: "c"}], d: null}); return [s, JSON.parse(s), JSON.stringify({x: 1}, null, 1)]'), [
    '{"a":[1,2,{"b":"c"}],"d":null}',
    { a: [1, 2, { b: 'c' }], d: null },
    '{\n "x": 1\n}',
  ]);
  t.same(
    await failure(t, 'return JSON.parse("{bad")'),
    { kind: ErrorKind.THROWN, name: 'SyntaxError', message: 'expecting property name' },
    'a JSON syntax error is a normal throw',
  );
});

t.test('Date', async (t) => {
  t.same(
    await value(
      t,
      'const d = new Date(Date.UTC(2024, 0, 2, 3, 4, 5));\n' +
        'return [d.toISOString(), d.getTime(), d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCHours(), d.getUTCDay(), ' +
        'Date.parse("2024-01-02T03:04:05Z"), new Date(0).toJSON(), typeof Date.now(), Date.now() > 1.7e12, d]',
    ),
    ['2024-01-02T03:04:05.000Z', 1704164645000, 2024, 0, 2, 3, 2, 1704164645000, '1970-01-01T00:00:00.000Z', 'number', true, '2024-01-02T03:04:05.000Z'],
  );
});

t.test('Math', async (t) => {
  t.same(
    await value(
      t,
      'return [Math.max(1, 5, 3), Math.min(2, -1), Math.floor(2.7), Math.ceil(2.1), Math.abs(-3), Math.sqrt(16), Math.pow(2, 10), Math.round(Math.PI * 100), Math.sign(-4), Math.trunc(-4.7), Math.hypot(3, 4)]',
    ),
    [5, -1, 2, 3, 3, 4, 1024, 314, -1, -4, 5],
  );
  t.same(await value(t, 'const r = Math.random(); return r >= 0 && r < 1'), true, 'Math.random');
});

t.test('RegExp: match, replace, test', async (t) => {
  t.same(
    await value(
      t,
      'const m = "key=value".match(/^(\\w+)=(\\w+)$/);\n' +
        'return ["a1b22c333".match(/\\d+/g), [m[0], m[1], m[2], m.index], "hello".replace(/l/g, "L"), "2024-01-02".replace(/(\\d+)-(\\d+)-(\\d+)/, "$3.$2.$1"), ' +
        '"x".replace(/x/, () => "fn"), /^ab/i.test("ABC"), /^ab/.test("xab"), "none".match(/z/), [..."a1b2".matchAll(/\\d/g)].map((x) => x[0]), new RegExp("a+", "g").source]',
    ),
    [['1', '22', '333'], ['key=value', 'key', 'value', 0], 'heLLo', '02.01.2024', 'fn', true, false, null, ['1', '2'], 'a+'],
  );
});

t.test('Array methods', async (t) => {
  t.same(
    await value(
      t,
      'return [[3, 1, 2].sort(), [1, 2, 3].map((x) => x * 2), [1, 2, 3, 4].filter((x) => x % 2), [1, 2, 3].reduce((a, b) => a + b, 0), ' +
        '[1, [2, [3]]].flat(Infinity), Array.from({length: 3}, (_, i) => i), [1, 2, 3].includes(2), [1, 2, 3].find((x) => x > 1), ' +
        '[1, 2, 3].at(-1), [1, 2, 3].indexOf(3), [1, 2].concat([3]), [1, 2, 3].slice(1), [1, 2, 3].some((x) => x > 2), [1, 2, 3].every((x) => x > 0), ' +
        '["b", "a"].join("-"), [1, 2, 3].reverse(), Array.isArray([]), [1, 2].flatMap((x) => [x, x]), [3, 1, 2].toSorted(), [1, 2, 3].findLast((x) => x < 3)]',
    ),
    [[1, 2, 3], [2, 4, 6], [1, 3], 6, [1, 2, 3], [0, 1, 2], true, 2, 3, 2, [1, 2, 3], [2, 3], true, true, 'b-a', [3, 2, 1], true, [1, 1, 2, 2], [1, 2, 3], 2],
  );
  t.same(
    await value(t, 'const a = [1]; a.push(2, 3); const last = a.pop(); a.unshift(0); a.splice(1, 1); return [a, last]'),
    [[0, 2], 3],
    "mutating methods work on the code's own arrays",
  );
});

t.test('Object methods', async (t) => {
  t.same(
    await value(
      t,
      'const o = {a: 1, b: 2};\n' +
        'return [Object.keys(o), Object.values(o), Object.entries(o), Object.assign({}, o, {c: 3}), Object.fromEntries([["x", 1]]), ' +
        'Object.isFrozen(Object.freeze({})), Object.getOwnPropertyNames({z: 1}), Object.hasOwn(o, "a"), {...o, b: 5}, ' +
        'Object.getPrototypeOf([]) === Array.prototype, Object.create(null) instanceof Object, Object.is(NaN, NaN)]',
    ),
    [
      ['a', 'b'],
      [1, 2],
      [
        ['a', 1],
        ['b', 2],
      ],
      { a: 1, b: 2, c: 3 },
      { x: 1 },
      true,
      ['z'],
      true,
      { a: 1, b: 5 },
      true,
      false,
      true,
    ],
  );
});

t.test('atob and btoa', async (t) => {
  t.same(
    await value(t, 'return [btoa("hello"), atob("aGVsbG8="), atob(" aGVs\\nbG8= "), btoa(""), atob(""), btoa("\\u00ff\\u00e9"), atob("/+k=")]'),
    ['aGVsbG8=', 'hello', 'hello', '', '', '/+k=', '\u00ff\u00e9'],
    'encode and decode',
  );
  t.same(
    await value(
      t,
      'let all = ""; for (let i = 0; i < 256; i++) all += String.fromCharCode(i);\n' +
        'const back = atob(btoa(all));\n' +
        'return [back.length, back === all, btoa(all).slice(0, 8)]',
    ),
    [256, true, 'AAECAwQF'],
    'every Latin-1 character round-trips, NUL included',
  );
  t.same(
    await value(t, 'return [btoa("a\\u0000b"), atob("YQBi").length, atob("AA==") === "\\u0000"]'),
    ['YQBi', 3, true],
    'NUL characters are kept (binary strings)',
  );

  const rejects = async (code: string, message: string, what: string) => {
    const r = await value(t, `try { ${code}; return 'no error'; } catch (e) { return [e.name, e.message]; }`);
    t.same(r, ['TypeError', message], `${what}: TypeError with its message`);
  };
  await rejects('btoa("\\u20ac")', 'btoa: the string has characters outside Latin-1 (encode it first)', 'btoa of a non-Latin-1 string');
  await rejects('btoa("\\u0100")', 'btoa: the string has characters outside Latin-1 (encode it first)', 'btoa of U+0100');
  await rejects('atob("***")', 'atob: the string is not valid base64', 'atob of non-base64 characters');
  await rejects('atob("abcde")', 'atob: the string is not valid base64', 'atob of a bad length');
  await rejects('atob("ab=c")', 'atob: the string is not valid base64', 'atob with padding inside');
  t.same(
    await value(
      t,
      'const out = [];\n' +
        'try { btoa("\\u20ac"); } catch (e) { out.push(e instanceof TypeError, Object.getPrototypeOf(e) === TypeError.prototype); }\n' +
        'try { atob("***"); } catch (e) { out.push(e instanceof TypeError, Object.getPrototypeOf(e) === TypeError.prototype); }\n' +
        'return out',
    ),
    [true, true, true, true],
    'the errors of btoa and atob are real TypeError instances (`catch (e) { if (e instanceof TypeError) ... }` works)',
  );
});

t.test('Buffer.from', async (t) => {
  t.same(
    await value(t, 'const a = [1, 2, 255]; const b = Buffer.from(a); a[0] = 9; return [b instanceof Uint8Array, Array.from(b), b.length, b]'),
    [true, [1, 2, 255], 3, 'AQL/'],
    'from an Array: a Uint8Array copy, returned as base64',
  );
  t.same(
    await value(t, 'const u = new Uint8Array([4, 5, 6]); const b = Buffer.from(u); u[0] = 0; return [b instanceof Uint8Array, b !== u, Array.from(b), b]'),
    [true, true, [4, 5, 6], 'BAUG'],
    'from a Uint8Array: a copy',
  );
  t.same(
    await value(
      t,
      'const ab = new Uint8Array([7, 8, 9]).buffer; const b = Buffer.from(ab); new Uint8Array(ab)[0] = 0; return [b instanceof Uint8Array, Array.from(b), b]',
    ),
    [true, [7, 8, 9], 'BwgJ'],
    'from an ArrayBuffer: a copy',
  );
  t.equal(await value(t, 'return Buffer.from([])'), '', 'an empty Uint8Array is the empty base64 string');
  t.equal(await value(t, 'return Buffer.from([104, 105]).toString("base64")'), '104,105', 'no base64 toString (spec)');

  const thrown = async (code: string) => value(t, `try { ${code}; return 'no error'; } catch (e) { return [e.name, e.message, e instanceof TypeError]; }`);
  t.same(
    await thrown('Buffer.from("aGk=")'),
    ['TypeError', 'Buffer.from takes an Array, Uint8Array or ArrayBuffer, got string (use atob for base64)', true],
    'a string throws a TypeError',
  );
  t.same(
    await thrown('Buffer.from({length: 1})'),
    ['TypeError', 'Buffer.from takes an Array, Uint8Array or ArrayBuffer, got object', true],
    'another type throws a TypeError',
  );
  t.same(
    await thrown('Buffer.from([1], "utf8")'),
    ['TypeError', 'Buffer.from takes exactly one argument: an Array, Uint8Array or ArrayBuffer', true],
    'two arguments throw',
  );
  t.same(
    await thrown('Buffer.from()'),
    ['TypeError', 'Buffer.from takes exactly one argument: an Array, Uint8Array or ArrayBuffer', true],
    'no argument throws',
  );
  t.same(
    await failure(t, 'Buffer.from("x")'),
    { kind: ErrorKind.THROWN, name: 'TypeError', message: 'Buffer.from takes an Array, Uint8Array or ArrayBuffer, got string (use atob for base64)' },
    'uncaught, it is a THROWN error',
  );
});

t.test('ld.log formats its arguments', async (t) => {
  const o = await run(
    t,
    'ld.log("hello");\nld.log(42);\nld.log({a: 1, b: [1, "x"]});\nld.log(new TypeError("bad"));\n' +
      'ld.log("a", 1, true, null, undefined, {x: 1});\nld.log();\nld.log([1, 2]);\nld.log(function foo() {});\n' +
      'ld.log(new Uint8Array(3));\nld.log(1.5, NaN);\nld.log(10n);\nreturn null',
  );
  t.same(o.error, undefined);
  t.same(o.logs, [
    info('hello'),
    info('42'),
    info('{"a":1,"b":[1,"x"]}'),
    info('TypeError: bad'),
    info('a 1 true null undefined {"x":1}'),
    info(''),
    info('[1,2]'),
    info('[Function foo]'),
    info('[Uint8Array 3 bytes]'),
    info('1.5 NaN'),
    info('10'),
  ]);
  const thrown = await run(t, 'ld.log("before");\nthrow new Error("after")');
  t.same(thrown.logs, [info('before')], 'logs written before a throw are kept');
  t.equal(thrown.error?.kind, ErrorKind.THROWN);
});

t.test('data.auth values are redacted', async (t) => {
  const auth = { token: 's3cr3t-tok3n-value', user: 'alice', creds: { password: 'hunter2-pass' } };
  const o = await run(t, {
    auth,
    code:
      'ld.log("token is", data.auth.token);\n' +
      'ld.log({nested: {t: data.auth.token, deeper: {p: data.auth.creds.password}}, keep: "visible"});\n' +
      'ld.log("Authorization: Basic " + btoa(data.auth.user + ":" + data.auth.creds.password));\n' +
      'ld.log(btoa(data.auth.token));\n' +
      'ld.log(new Error("bad " + data.auth.token));\n' +
      'return "done"',
  });
  t.equal(o.result, 'done');
  t.same(o.logs, [
    info('token is [REDACTED]'),
    info('{"nested":{"t":"[REDACTED]","deeper":{"p":"[REDACTED]"}},"keep":"visible"}'),
    info('Authorization: Basic [REDACTED]'),
    info('[REDACTED]'),
    info('Error: bad [REDACTED]'),
  ]);

  const thrown = await run(t, {
    auth,
    code: 'function f() {\n  throw new Error("request failed for " + data.auth.token);\n}\nf();',
  });
  t.same(
    thrown.error && { kind: thrown.error.kind, name: thrown.error.name, message: thrown.error.message },
    { kind: ErrorKind.THROWN, name: 'Error', message: 'request failed for [REDACTED]' },
    'in the message of a thrown error',
  );
  t.match(
    thrown.error?.stack ?? '',
    /^ {4}at f \(user\.js:2:\d+\)\n {4}at <anonymous> \(user\.js:4:\d+\)$/,
    'the stack holds the user frames, without the secret',
  );

  const named = await run(t, {
    auth,
    code: 'const o = {[data.auth.token]: function () { throw new Error("x"); }};\no[data.auth.token]();',
  });
  t.notMatch(named.error?.stack ?? '', /s3cr3t/, 'no secret in the stack');
  t.match(named.error?.stack ?? '', /^ {4}at \[REDACTED\] \(user\.js:1:\d+\)/, 'a function named by a secret is redacted in the stack');

  const rejected = await run(t, { auth, code: 'await ld.wait(1);\nthrow {token: data.auth.token}' });
  t.same(
    rejected.error && { name: rejected.error.name, message: rejected.error.message },
    { name: 'Error', message: 'Uncaught {"token":"[REDACTED]"}' },
    'in a thrown non-Error value',
  );

  const basicShortUser = await run(t, {
    auth: { username: 'bob', password: 'pw-123456' },
    code: 'ld.log("Basic " + btoa(data.auth.username + ":" + data.auth.password)); return 1',
  });
  t.same(basicShortUser.logs, [info('Basic [REDACTED]')], 'Basic auth with a short user name');
});

t.test('log truncation', async (t) => {
  const small = await startTestRunner({ LDBOX_MAX_LOG_ENTRIES: '3', LDBOX_MAX_LOG_BYTES: '1024' });
  t.teardown(() => small.close());
  const o = await run(t, 'for (let i = 0; i < 7; i++) ld.log("line " + i);\nreturn 1', small);
  t.equal(o.result, 1, 'the result is not affected');
  t.same(o.logs, [
    info('line 0'),
    info('line 1'),
    info('line 2'),
    { level: LogLevel.WARN, message: 'logs truncated: 4 more entries dropped (limits: 3 entries, 1024 characters)' },
  ]);
  const exact = await run(t, 'for (let i = 0; i < 3; i++) ld.log("line " + i);\nreturn 1', small);
  t.same(exact.logs, [info('line 0'), info('line 1'), info('line 2')], 'exactly at the limit: no marker');

  // A single line longer than the character budget is cut and marked by ld.log, not thrown away.
  const long = await run(t, 'ld.log("x".repeat(2000));\nreturn 1', small);
  t.equal(long.logs[0]?.level, LogLevel.INFO, 'the long line is kept as an INFO entry');
  t.match(long.logs[0]?.message ?? '', /^x{100}.* \[truncated\]$/, 'cut with a [truncated] mark');
});

t.test('ld.wait', async (t) => {
  t.equal(await value(t, 'await ld.wait(0); return "zero"'), 'zero', '0 is allowed');
  const started = performance.now();
  const waited = await value(t, 'const t0 = Date.now(); await ld.wait(50); const ms = Date.now() - t0; return [ms >= 45, ms < 5000]');
  t.ok(performance.now() - started >= 45, 'the call took at least 45 ms');
  t.same(waited, [true, true], 'the code saw about 50 ms pass');
  t.same(await value(t, 'const p = ld.wait(30000); return [typeof p.then, p instanceof Promise]'), ['function', true], '30000 is accepted (not awaited)');
  const bad: [string, string][] = [
    ['-1', '-1'],
    ['30001', '30001'],
    ['NaN', 'NaN'],
    ['"10"', 'a string'],
    ['Infinity', 'Infinity'],
    ['', 'nothing'],
  ];
  for (const [arg, shown] of bad) {
    t.same(
      await value(t, `try { await ld.wait(${arg}); return 'no error'; } catch (e) { return [e.name, e.message]; }`),
      ['RangeError', `ld.wait(ms) takes a number from 0 to 30000, got ${shown}`],
      `ld.wait(${arg}) throws a RangeError`,
    );
  }
  t.same(
    await failure(t, 'await ld.wait(-1);\nreturn 1'),
    { kind: ErrorKind.THROWN, name: 'RangeError', message: 'ld.wait(ms) takes a number from 0 to 30000, got -1' },
    'uncaught, it is a THROWN error',
  );
  t.same(
    await value(t, 'try { ld.wait(-1); } catch (e) { return [e instanceof RangeError, Object.getPrototypeOf(e) === RangeError.prototype]; }'),
    [true, true],
    'the error is a real RangeError instance',
  );
});

t.test('frozen globals', async (t) => {
  const assign = async (code: string) => value(t, `try { ${code}; return 'no error'; } catch (e) { return [e.name, e.message, e instanceof TypeError]; }`);
  t.same(await assign('Array.prototype.x = 1'), ['TypeError', 'object is not extensible', true], 'Array.prototype.x');
  t.same(await assign('Math.PI2 = 1'), ['TypeError', 'object is not extensible', true], 'Math.PI2');
  t.same(await assign('globalThis.y = 1'), ['TypeError', 'object is not extensible', true], 'globalThis.y');
  t.same(await assign('JSON.parse = () => 1'), ['TypeError', "'parse' is read-only", true], 'JSON.parse');
  t.same(
    await assign('Object.prototype.toString = () => "x"'),
    ['TypeError', 'Cannot assign to read only property toString', true],
    'Object.prototype.toString',
  );
  t.same(await assign('ld.log = () => 1'), ['TypeError', "'log' is read-only", true], 'ld.log');
  t.same(await assign('data = {}'), ['TypeError', "'data' is read-only", true], 'data');
  t.same(await value(t, 'return [Object.isFrozen(globalThis), Object.isFrozen(Array.prototype), Object.isFrozen(Math), Object.isFrozen(ld)]'), [
    true,
    true,
    true,
    true,
  ]);
  t.same(
    await failure(t, 'Array.prototype.x = 1;\nreturn 1'),
    { kind: ErrorKind.THROWN, name: 'TypeError', message: 'object is not extensible' },
    'uncaught, it is a THROWN error',
  );
});

t.test('own objects stay override-friendly', async (t) => {
  t.same(
    await value(t, 'const e = new Error("a"); e.name = "MyError"; return [e.name, String(e), Error.prototype.name]'),
    ['MyError', 'MyError: a', 'Error'],
    'e.name = ... on an Error instance',
  );
  t.equal(await value(t, 'const o = {}; o.toString = () => "mine"; return String(o)'), 'mine', 'o.toString = ...');
  t.same(
    await failure(t, 'class MyErr extends Error { constructor(m) { super(m); this.name = "MyErr"; } }\nthrow new MyErr("custom")'),
    { kind: ErrorKind.THROWN, name: 'MyErr', message: 'custom' },
    'a subclass that sets its name',
  );
});

t.test('stack traces show user lines only', async (t) => {
  const o = await run(t, 'const a = 1;\nconst b = 2;\nthrow new Error("line three");\n');
  t.equal(o.error?.kind, ErrorKind.THROWN);
  t.equal(o.error?.message, 'line three');
  t.match(o.error?.stack ?? '', /user\.js:3:/, 'the user line number');
  t.notMatch(o.error?.stack ?? '', /prelude|ldbox|<eval>|native/, 'no runner frames');
  const nested = await run(t, 'function inner() {\n  null.x;\n}\nfunction outer() { inner(); }\nouter();');
  t.equal(nested.error?.name, 'TypeError');
  t.match(nested.error?.stack ?? '', /^ {4}at inner \(user\.js:2:\d+\)\n {4}at outer \(user\.js:4:\d+\)\n {4}at <anonymous> \(user\.js:5:\d+\)$/);
  const host = await run(t, 'const x = 1;\nreturn btoa("\\u20ac");');
  t.match(host.error?.stack ?? '', /user\.js:2:/, 'an error from a built-in points at the user line');
  t.notMatch(host.error?.stack ?? '', /prelude|ldbox/, 'and not into the runner');
});

t.test('syntax errors', async (t) => {
  const o = await run(t, 'const a = 1;\nconst = 2;\nreturn a');
  t.same(o.error && { kind: o.error.kind, name: o.error.name, message: o.error.message, stack: o.error.stack }, {
    kind: ErrorKind.SYNTAX,
    name: 'SyntaxError',
    message: 'variable name expected',
    stack: '    at user.js:2:7',
  });
  t.equal(o.result, undefined);
  const eof = await run(t, 'return {a: 1,\n');
  t.same(
    eof.error && { kind: eof.error.kind, name: eof.error.name },
    { kind: ErrorKind.SYNTAX, name: 'SyntaxError' },
    'an unfinished body is a syntax error too',
  );
});

t.test('thrown non-Error values', async (t) => {
  t.same(await failure(t, 'throw "boom"'), { kind: ErrorKind.THROWN, name: 'Error', message: 'Uncaught "boom"' });
  t.same(await failure(t, 'throw {a: 1}'), { kind: ErrorKind.THROWN, name: 'Error', message: 'Uncaught {"a":1}' });
  t.same(await failure(t, 'throw 42'), { kind: ErrorKind.THROWN, name: 'Error', message: 'Uncaught 42' });
  t.same(await failure(t, 'throw null'), { kind: ErrorKind.THROWN, name: 'Error', message: 'Uncaught null' });
});

t.test('undefined becomes null', async (t) => {
  for (const code of ['return undefined', 'return', 'const x = 1;', 'return Promise.resolve(undefined)']) {
    const o = await run(t, code);
    t.equal(o.error, undefined, `${code}: no error`);
    t.equal(o.result, null, `${code}: result null`);
    t.same(
      o.logs,
      [{ level: LogLevel.WARN, message: 'the code returned undefined, so the result is null: end it with a return statement' }],
      `${code}: warned`,
    );
  }
});
