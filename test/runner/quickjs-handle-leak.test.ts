/**
 * No QuickJS handle, object or host reference leaks (STYLE "Resources"; issue 10). A call's handles are
 * never disposed one by one: the snapshot restore takes the realm back whole (runner/sandbox/
 * snapshot-realm.ts). What must hold, then, is that the realm after any number of calls is the realm as
 * prepared, and that the prepared realm owns nothing it did not dispose. The proof is QuickJS's own:
 * `JS_FreeRuntime` asserts that no object is left (`list_empty(&rt->gc_obj_list)`), and the release build
 * keeps the assertion, so a realm that leaked one object cannot be torn down. In-process, on real modules,
 * beside test/runner/snapshot-realm.test.ts.
 */
import t from 'tap';
import { runSandbox, type SandboxRequest } from '../../runner/sandbox/index.js';
import { inProcessLimits, MiB, sandboxRequest } from '../helpers/sandbox-calls.js';
import type { SnapshotRealm } from '../../runner/sandbox/snapshot-realm.js';
import { type CappedModule, createCappedModule } from '../../runner/sandbox/wasm-modules.js';

const LIMITS = inProcessLimits(16 * MiB);
const SECRET = 'secret-value-1234';
/** Calls with a secret in `auth`, so redaction runs too. */
const request = (code: string, extra: Partial<SandboxRequest> = {}) =>
  sandboxRequest(code, { dataJson: JSON.stringify({ input: { n: 1 }, auth: { token: SECRET } }), secrets: [SECRET], memoryBytes: 48 * MiB, ...extra });

/** A module whose realm is prepared (by a first call). */
async function preparedModule(): Promise<CappedModule & { realm: SnapshotRealm }> {
  const cm = await createCappedModule(64 * MiB);
  const out = await runSandbox(cm, request('return 1'), LIMITS);
  if (out.resultJson !== '1' || cm.realm === undefined) throw new Error(`the first call failed: ${JSON.stringify(out.error)}`);
  return cm as CappedModule & { realm: SnapshotRealm };
}

/**
 * Frees the realm in reverse order of its making: the handles it keeps, then the context, then the
 * runtime. Throws (QuickJS aborts) when an object is still alive. The module is unusable afterwards.
 */
function tearDown(cm: CappedModule, realm: SnapshotRealm): void {
  cm.broken = true;
  for (const h of [realm.report, realm.explain, realm.serialize, realm.setData]) h.dispose();
  realm.ctx.dispose();
  realm.rt.dispose();
}

/** The runtime's object and allocation counts, read on the restored realm and restored again after. */
function memoryUsage(realm: SnapshotRealm): string {
  realm.restoreForTest();
  const usage = realm.rt.dumpMemoryUsage();
  realm.restoreForTest();
  return usage;
}

const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

t.test('the check can fail: a realm holding one undisposed object cannot be torn down', async (t) => {
  const cm = await preparedModule();
  cm.realm.restoreForTest();
  cm.realm.ctx.newObject(); // never disposed
  t.throws(() => tearDown(cm, cm.realm), /Assertion failed: list_empty\(&rt->gc_obj_list\)/);
});

t.test('a prepared realm owns nothing it did not dispose', async (t) => {
  const cm = await preparedModule();
  cm.realm.restoreForTest();
  t.doesNotThrow(() => tearDown(cm, cm.realm));
  t.equal(cm.realm.rt.alive, false, 'the runtime is freed');
});

t.test('calls that return, throw, time out and move big values leave no handle, object or timer behind', async (t) => {
  const cm = await preparedModule();
  const realm = cm.realm;
  const prepared = memoryUsage(realm);
  const refs = realm.rt.hostRefs as unknown as { nextId: number };
  const startId = refs.nextId;
  const timersBefore = timers();
  const bigInput = JSON.stringify({ input: { rows: Array.from({ length: 20_000 }, (_, i) => ({ i, s: `row ${i}` })) }, auth: {} });

  const kinds: {
    name: string;
    code: string;
    extra?: Partial<SandboxRequest>;
    times: number;
    expect: (out: Awaited<ReturnType<typeof runSandbox>>) => boolean;
  }[] = [
    { name: 'a value', code: "return { a: [1, 'b', null], n: data.input.n }", times: 200, expect: (o) => o.resultJson === '{"a":[1,"b",null],"n":1}' },
    { name: 'host calls', code: "ld.log('x', data.auth); await ld.wait(0); return atob(btoa('hello'))", times: 200, expect: (o) => o.resultJson === '"hello"' },
    { name: 'a thrown error', code: "throw new TypeError('nope')", times: 200, expect: (o) => o.error?.kind === 'thrown' && o.error.name === 'TypeError' },
    { name: 'a syntax error', code: 'return 1 +', times: 100, expect: (o) => o.error?.kind === 'syntax' },
    {
      name: 'a rejected promise',
      code: "await ld.wait(0); throw new RangeError('later')",
      times: 100,
      expect: (o) => o.error?.kind === 'thrown' && o.error.name === 'RangeError',
    },
    { name: 'a promise that never settles', code: 'await new Promise(() => {})', times: 50, expect: (o) => o.error !== undefined },
    { name: 'a timeout', code: 'for (;;) {}', extra: { timeoutMs: 30 }, times: 20, expect: (o) => o.error?.kind === 'timeout' },
    {
      name: 'a timeout while waiting on the host',
      code: 'await ld.wait(30000)',
      extra: { timeoutMs: 30 },
      times: 20,
      expect: (o) => o.error?.kind === 'timeout',
    },
    { name: 'a big string', code: "return 'x'.repeat(4 << 20)", times: 20, expect: (o) => o.resultJson?.length === (4 << 20) + 2 },
    { name: 'big bytes', code: 'const a = new Uint8Array(2 << 20); a.fill(7); return a', times: 20, expect: (o) => (o.resultJson?.length ?? 0) > 2 << 20 },
    { name: 'a big input', code: 'return data.input.rows.length', extra: { dataJson: bigInput }, times: 20, expect: (o) => o.resultJson === '20000' },
    { name: 'an undeliverable result', code: 'const a = {}; a.self = a; return a', times: 50, expect: (o) => o.error?.kind === 'invalid-result' },
  ];
  for (const kind of kinds) {
    let unexpected = 0;
    for (let i = 0; i < kind.times; i++) {
      const out = await runSandbox(cm, request(kind.code, kind.extra), LIMITS);
      if (!kind.expect(out)) unexpected++;
    }
    t.equal(unexpected, 0, `${kind.times} × ${kind.name}: every call had the expected outcome`);
  }

  t.equal(cm.broken, false, 'the module is still usable');
  t.equal(refs.nextId, startId, 'no host reference was created by a call');
  // Timers of a call (its deadline, cancellation polling, ld.wait) end with the call.
  t.equal(timers(), timersBefore, 'no timer is left running');
  t.equal(memoryUsage(realm), prepared, 'the runtime counts the same objects and allocations as when prepared');
  realm.restoreForTest();
  t.equal(realm.differenceFromSnapshot(), undefined, 'byte-identical to the snapshot');
  t.doesNotThrow(() => tearDown(cm, realm), 'the realm tears down with no object left');
});
