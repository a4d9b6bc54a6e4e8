/**
 * Messages that teach (runner/sandbox/error-hints.ts) and the warnings of a call that returned too
 * early (run-sandbox.ts, the prelude's report): the common mistakes of integration code get a message
 * that names what to use instead, and nothing new appears in the realm. In-process, on real QuickJS modules.
 */
import t from 'tap';
import { runSandbox, type SandboxOutcome } from '../../runner/sandbox/index.js';
import { closest, editDistance } from '../../runner/sandbox/error-hints.js';
import { createCappedModule } from '../../runner/sandbox/wasm-modules.js';
import { inProcessLimits, MiB, sandboxRequest } from '../helpers/sandbox-calls.js';

const LIMITS = inProcessLimits();
const cm = await createCappedModule(64 * MiB);

async function run(code: string): Promise<SandboxOutcome> {
  return runSandbox(cm, sandboxRequest(code), LIMITS);
}

async function failure(code: string): Promise<{ kind?: string; name?: string; message?: string }> {
  const o = await run(code);
  return { kind: o.error?.kind, name: o.error?.name, message: o.error?.message };
}

const NO_MODULES = 'there are no modules: the code is a function body, and the built-ins are on ld';

t.test('a misspelt built-in names the closest one', async (t) => {
  t.same(await failure('return ld.requst({})'), { kind: 'thrown', name: 'TypeError', message: 'ld.requst is not a function — did you mean ld.request?' });
  t.same(await failure("ld.lgo('x')"), { kind: 'thrown', name: 'TypeError', message: 'ld.lgo is not a function — did you mean ld.log?' });
  t.same(await failure('\n  await ld.Wait(1)'), { kind: 'thrown', name: 'TypeError', message: 'ld.Wait is not a function — did you mean ld.wait?' });
  t.same(await failure('ld.csv2parqet(1)'), { kind: 'thrown', name: 'TypeError', message: 'ld.csv2parqet is not a function — did you mean ld.csv2parquet?' });
  const far = await failure('ld.sendEmail(1)');
  t.match(far.message, /^ld\.sendEmail is not a function: the built-ins are ld\.log, ld\.wait, ld\.request, .*ld\.json2csv$/, 'no close name: the list');
});

t.test('other calls of a non-function name the callee, unless the source does not say', async (t) => {
  t.same(await failure('const o = {}; o.foo()'), { kind: 'thrown', name: 'TypeError', message: 'o.foo is not a function' });
  t.same(await failure('const f = 3;\nreturn f(1)'), { kind: 'thrown', name: 'TypeError', message: 'f is not a function' });
  t.same(await failure('const a = [{}]; a[0].x()'), { kind: 'thrown', name: 'TypeError', message: 'not a function' });
  t.same(await failure('(void 0)()'), { kind: 'thrown', name: 'TypeError', message: 'not a function' });
  t.same(await failure("throw new TypeError('not a function')"), { kind: 'thrown', name: 'TypeError', message: 'not a function' });
});

t.test('globals of Node and browsers say what to use instead', async (t) => {
  const cases: [string, string][] = [
    ["console.log('x')", 'console is not available in the sandbox: use ld.log(...)'],
    ["return await fetch('https://example.com')", 'fetch is not available in the sandbox: use ld.request({ method, url, ... })'],
    ['setTimeout(() => 1, 5)', 'setTimeout is not available in the sandbox: use await ld.wait(ms)'],
    ['setInterval(() => 1, 5)', 'setInterval is not available in the sandbox: use await ld.wait(ms) in a loop'],
    ["const fs = require('fs')", `require is not available in the sandbox: ${NO_MODULES}`],
  ];
  for (const [code, message] of cases) t.same(await failure(code), { kind: 'thrown', name: 'ReferenceError', message }, code);
  t.same(await failure('return dta.input'), { kind: 'thrown', name: 'ReferenceError', message: "'dta' is not defined — did you mean data?" });
  t.same(await failure('return undeclared'), { kind: 'thrown', name: 'ReferenceError', message: "'undeclared' is not defined" }, 'no close name');
  t.same(await failure('return process.env'), { kind: 'thrown', name: 'ReferenceError', message: "'process' is not defined" });
});

t.test('import and export say the code is a function body', async (t) => {
  t.same(await failure("const m = await import('fs'); return m"), {
    kind: 'thrown',
    name: 'ReferenceError',
    message: `import('fs') is not available in the sandbox: ${NO_MODULES}`,
  });
  t.same(await failure("// a comment\nimport fs from 'fs';\nreturn 1"), {
    kind: 'syntax',
    name: 'SyntaxError',
    message: `import statements are not available in the sandbox: ${NO_MODULES} (expecting '(')`,
  });
  t.same(await failure("import { a } from 'b'"), {
    kind: 'syntax',
    name: 'SyntaxError',
    message: `import statements are not available in the sandbox: ${NO_MODULES} (expecting '(')`,
  });
  t.same(await failure('export default 1'), {
    kind: 'syntax',
    name: 'SyntaxError',
    message: `export statements are not available in the sandbox: ${NO_MODULES} (unsupported keyword: export)`,
  });
  t.same(await failure('return ('), { kind: 'syntax', name: 'SyntaxError', message: "unexpected token in expression: '}' (at the end of the code)" });
});

t.test('a caught mistake is the code’s own business: only the error that ends the call is rewritten', async (t) => {
  const o = await run('try { console.log(1) } catch (e) { return e.message }');
  t.equal(o.resultJson, JSON.stringify("'console' is not defined"));
});

const warn = (message: string) => ({ level: 'warn', message });

t.test('a body that returns undefined is warned about', async (t) => {
  for (const code of ['const x = 1;', 'return', 'return undefined', 'await ld.wait(0)']) {
    const o = await run(code);
    t.equal(o.resultJson, 'null', code);
    t.same(o.logs, [warn('the code returned undefined, so the result is null: end it with a return statement')], code);
  }
  t.same((await run('return null')).logs, [], 'null is a value');
  t.same((await run('return 0')).logs, []);
});

t.test('an ld.* promise still pending at return is warned about', async (t) => {
  const o = await run('ld.wait(1000); return 1');
  t.equal(o.resultJson, '1');
  t.same(o.logs, [warn('ld.wait was still pending when the code returned: its result is lost (await it before returning)')]);
  const observed = await run("ld.wait(1000).then(() => ld.log('late')); return 2");
  t.same(observed.logs, [warn('ld.wait was still pending when the code returned: its result is lost (await it before returning)')], 'observed, yet lost');
  t.same((await run('await ld.wait(1); await Promise.all([ld.wait(1), ld.wait(2)]); return 3')).logs, [], 'all awaited: no warning');
});

t.test('an ld.* promise rejected unobserved is warned about; an observed one is not', async (t) => {
  const refused = (url: string) => `ld.request({ method: 'GET', url: '${url}' })`;
  const o = await run(`${refused('http://127.0.0.1/')}; await ld.wait(100); return 1`);
  t.equal(o.resultJson, '1');
  t.same(o.logs, [
    warn(
      'ld.request failed and nothing awaited it: Error: ld.request refused http://127.0.0.1/: 127.0.0.1 is a loopback address, which the egress guard blocks (await it, or add .catch)',
    ),
  ]);
  const thrown = await run(`${refused('http://10.0.0.1/')}; await ld.wait(100); throw new Error('x')`);
  t.equal(thrown.error?.message, 'x');
  t.equal(thrown.logs.length, 1, 'also when the code then threw');
  for (const observe of [
    `try { await ${refused('http://127.0.0.1/')} } catch (e) {}`,
    `${refused('http://127.0.0.1/')}.catch(() => {}); await ld.wait(100)`,
    `const p = ${refused('http://127.0.0.1/')}; await ld.wait(100); await p.then(() => 1, () => 2)`,
    `await Promise.allSettled([${refused('http://127.0.0.1/')}])`,
  ]) {
    const ok = await run(`${observe}; return 1`);
    t.same([ok.resultJson, ok.logs], ['1', []], observe);
  }
  const many = await run('for (let i = 0; i < 8; i++) ld.wait(1000); return 1');
  t.equal(many.logs.length, 6, 'at most five, then a count');
  t.same(many.logs[5], warn('… and 3 more ld.* calls not awaited'));
});

t.test('the promises of ld.* stay promises, and the realm stays byte-identical', async (t) => {
  const o = await run(
    'const p = ld.wait(1); const q = p.then(() => 1); await p; return [p instanceof Promise, q.constructor === Promise, Object.isFrozen(p.constructor), Object.isFrozen(Object.getPrototypeOf(p))]',
  );
  t.equal(o.resultJson, '[true,true,true,true]');
  const tamper = await run('const p = ld.wait(1); await p; Object.getPrototypeOf(p).then = 1; return 1');
  t.equal(tamper.error?.name, 'TypeError', 'the prototype of ld.* promises is frozen');
  await run('ld.wait(1000); console.log(1)');
  cm.realm!.restoreForTest();
  t.equal(cm.realm!.differenceFromSnapshot(), undefined);
});

t.test('edit distance and the closest name', async (t) => {
  t.equal(editDistance('requst', 'request'), 1);
  t.equal(editDistance('lgo', 'log'), 1, 'a swap is one edit');
  t.equal(editDistance('', 'abc'), 3);
  t.equal(closest('reqest', ['request', 'wait']), 'request');
  t.equal(closest('xyz', ['request', 'wait']), undefined);
  t.equal(closest('wiat', ['request', 'wait']), 'wait');
});
