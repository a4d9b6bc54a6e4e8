import { randomFillSync } from 'node:crypto';
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime } from 'quickjs-emscripten';
import { InvalidResultError, validateResult } from '../results/index.js';
import type { BuiltinConfig } from '../builtins/guest-boundary.js';
import { registeredBuiltins } from './builtin-registry.js';
import { CallState } from './call-state.js';
import { parseWithBinaries, readGuestPair } from './data-crossing.js';
import { LogBuffer } from './log-buffer.js';
import { GuestAllocationError } from './guest-allocation-error.js';
import { SandboxInternalError, SnapshotRealm } from './snapshot-realm.js';
import { createRedactor } from './redactor.js';
import { type SandboxNames, teachingMessage } from './error-hints.js';
import type { SandboxError, SandboxOutcome, SandboxRequest, UserErrorKind } from './types.js';
import { countLines, USER_FILE, userStack, wrapUserCode } from './user-stack.js';
import { type CappedModule, INITIAL_MEMORY_BYTES, WASM_PAGE } from './wasm-modules.js';

export { SandboxInternalError };

/** Operator limits that shape every call (from config). */
export interface SandboxLimits {
  /** Largest result (JSON text + binary bytes). Larger results fail with ERROR_KIND_INVALID_RESULT. */
  maxResultBytes: number;
  maxLogEntries: number;
  maxLogChars: number;
  /** QuickJS stack limit; must stay well inside the thread's V8 stack (see the notes on stack limits). */
  maxStackBytes: number;
  /** Settings of the ld.* built-ins. */
  builtins: BuiltinConfig;
}

/**
 * How the caller cancels a call. `isCancelled` is polled by QuickJS's interrupt handler, so it must
 * answer synchronously (a busy loop in the guest never lets an abort event be delivered); `signal`
 * wakes a call that is awaiting host work.
 */
export interface CancelSource {
  signal: AbortSignal;
  isCancelled(): boolean;
  /**
   * Called when the call first starts asynchronous host work (`ld.request`, `ld.wait`, …): from then on
   * the call may have had effects outside, so the pool must not run it again after losing its worker.
   */
  hostWorkStarted?(): void;
  /** As isCancelled, for the poll of waiting calls: must not count as the thread computing. */
  isCancelledQuietly?(): boolean;
  /** The call parked to wait for host work: the thread is free for another call (worker-lane.ts). */
  parked?(): void;
  /** The call is back from {@link parked} (resumed, or ended while parked). */
  resumed?(): void;
}

type ResultParts = Omit<SandboxOutcome, 'requestId' | 'logs' | 'wallTimeMs' | 'memoryUsedBytes'>;

interface Settled {
  kind: 'fulfilled' | 'rejected' | 'timeout' | 'cancelled' | 'unsettled';
  handle?: QuickJSHandle;
}

/**
 * Runs one call of user code on `cm`'s module: restores the module's prepared realm (snapshot-realm.ts),
 * so the call starts from a byte-identical realm no other call has run in, runs the code under its
 * limits and reads the outcome. User-code failures come back as `outcome.error`; only a failure of the
 * machinery throws. `cm.broken` is set when the module must not be reused.
 */
export async function runSandbox(cm: CappedModule, req: SandboxRequest, limits: SandboxLimits, cancel?: CancelSource): Promise<SandboxOutcome> {
  const started = performance.now();
  const redact = createRedactor(req.secrets);
  const logs = new LogBuffer(redact, limits.maxLogEntries, limits.maxLogChars);
  let realm: SnapshotRealm | undefined;
  let call: CallState | undefined;
  let error: SandboxError | undefined;
  let result: ResultParts = {};
  const onCancel = () => call?.cancel();
  let subscribed: AbortSignal | undefined;
  let hostWorkStarted = false;
  /** The heap this call reached, for its stats: read whenever it lets go of the module. */
  let heapEnd = 0;
  /** Whether the call let go of its module (another call's memory may be in it now). */
  let parked = false;

  try {
    realm = cm.realm ??= SnapshotRealm.prepare(cm, limits.maxStackBytes, registeredBuiltins());
    const { rt, ctx } = realm;
    call = new CallState(
      ctx,
      started + req.timeoutMs,
      logs,
      redact,
      limits.builtins,
      cancel && (() => cancel.isCancelled()),
      cancel && (() => (cancel.isCancelledQuietly ?? cancel.isCancelled).call(cancel)),
    );
    const state = call;
    // Only a call waiting for host work needs waking on a cancel (guest code is stopped through
    // isCancelled by the interrupt handler), so the signal is subscribed to when host work starts.
    state.onHostWork = () => {
      hostWorkStarted = true;
      cancel?.hostWorkStarted?.();
      if (!cancel) return;
      subscribed = cancel.signal;
      subscribed.addEventListener('abort', onCancel, { once: true });
      if (subscribed.aborted) onCancel();
    };
    state.nearMemoryCap = () => cm.memory.buffer.byteLength >= cm.capBytes - 4 * 1024 * 1024;
    cm.exhausted = false;
    state.memoryExhausted = () => cm.exhausted;
    realm.begin(state);
    rt.setMemoryLimit(req.memoryBytes);
    if (cancel?.isCancelled()) state.cancel();

    const seed = randomSeed();
    const filled = ctx.callFunction(realm.setData, ctx.undefined, [
      ctx.newString(req.dataJson),
      ctx.newNumber(limits.maxLogChars),
      ...seed.map((n) => ctx.newNumber(n)),
    ]);
    if (filled.error) {
      const d = ctx.dump(filled.error) as { message?: unknown };
      if (isOutOfMemory(d)) throw new OutOfMemoryDuringSetup();
      throw new SandboxInternalError(`setting data failed: ${JSON.stringify(d)}`);
    }

    const evaluated = ctx.evalCode(wrapUserCode(req.code), USER_FILE, { type: 'global', strict: true });
    if (evaluated.error) {
      error = describeError(ctx, state, realm.explain, evaluated.error, 'syntax', req);
    } else {
      const held = realm;
      const parking: Parking = {
        park: () => {
          heapEnd = Math.max(heapEnd, held.heapEnd());
          held.park();
          parked = true;
          cancel?.parked?.();
        },
        resume: () => {
          parked = false;
          cancel?.resumed?.();
          if (state.unresumable) throw new SandboxInternalError('the call could not be resumed: its memory could not be saved while it waited');
          held.resume(state);
          cm.exhausted = false;
        },
      };
      const settled = await settle(rt, ctx, state, evaluated.value, parking);
      // A call that ended while parked (timed out, cancelled) is not brought back: nothing of it is read.
      error = outcomeError(settled, ctx, state, realm.explain, req);
      if (hostWorkStarted && (settled.kind === 'fulfilled' || settled.kind === 'rejected')) warnAboutLdPromises(ctx, state, realm.report);
      if (!error && settled.handle) {
        const returnedUndefined = ctx.typeof(settled.handle) === 'undefined';
        const out = readResult(ctx, state, realm.serialize, realm.slot.token, settled.handle, req, limits);
        if ('error' in out) error = out.error;
        else {
          result = out;
          if (returnedUndefined) logs.warn('the code returned undefined, so the result is null: end it with a return statement');
        }
      }
    }
    // The module reached its cap, or a copy into it failed inside a built-in: the call is over.
    if (state.allocationFailed || (!parked && cm.exhausted)) error = memoryError(req);
  } catch (err) {
    const trapped = classifyTrap(cm, err, req);
    if (!trapped) throw err instanceof SandboxInternalError ? err : new SandboxInternalError('sandbox failure', { cause: err });
    error = trapped;
  } finally {
    subscribed?.removeEventListener('abort', onCancel);
    // No handle of the call is disposed: the next call's restore takes the realm back whole.
    if (parked) cancel?.resumed?.();
    if (realm && call) {
      if (!parked) heapEnd = Math.max(heapEnd, realm.heapEnd());
      realm.end(call);
    }
    call?.close();
  }
  // After a memory stop the module holds its high-water mark: give the memory back by replacing it.
  if (error?.kind === 'memory-limit') cm.broken = true;
  return {
    requestId: req.requestId,
    ...(error ? { error } : result),
    logs: logs.finish(),
    wallTimeMs: performance.now() - started,
    // This call's own footprint: the module's initial memory, or the heap the call reached if more
    // (the module's size would tell what earlier calls on it used).
    memoryUsedBytes: Math.max(INITIAL_MEMORY_BYTES, Math.ceil(heapEnd / WASM_PAGE) * WASM_PAGE),
    ...(call?.hostFault === undefined ? {} : { internalFault: describeHostFault(call.hostFault) }),
  };
}

/**
 * Prepares the module's realm ahead of its first call, so that a call arriving at an idle worker skips
 * the set-up (~3 ms). A module whose preparation fails is never used.
 */
export function prepareAhead(cm: CappedModule, limits: SandboxLimits): void {
  if (cm.broken || cm.realm) return;
  try {
    cm.realm = SnapshotRealm.prepare(cm, limits.maxStackBytes, registeredBuiltins());
  } catch {
    cm.broken = true;
  }
}

/**
 * Math.random's state is part of the snapshot, so every call would draw the same numbers: the prelude
 * replaces it with a generator seeded here, per call, from the host's CSPRNG (four 32-bit words).
 */
const seedWords = new Uint32Array(4 * 256);
let seedNext = seedWords.length;

function randomSeed(): number[] {
  if (seedNext >= seedWords.length) {
    randomFillSync(seedWords);
    seedNext = 0;
  }
  const at = seedNext;
  seedNext += 4;
  return [seedWords[at]!, seedWords[at + 1]!, seedWords[at + 2]!, seedWords[at + 3]!];
}

class OutOfMemoryDuringSetup extends Error {
  override name = 'OutOfMemoryDuringSetup';
}

function describeHostFault(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/** How the run loop lets go of its module while the call waits for host work, and takes it back. */
interface Parking {
  park(): void;
  resume(): void;
}

/**
 * Drives the guest's job queue until the returned promise settles. Host work wakes the loop; the
 * wall-clock deadline is enforced here because QuickJS's interrupt only fires while guest code runs.
 *
 * While the guest waits for host work (nothing left to run but pending `ld.*` calls) the call parks:
 * it lets go of the module, so that other calls run on it, and its memory is saved only if one of them
 * needs it (snapshot-realm.ts). Landed host work is handed to the guest once the call is back.
 */
async function settle(rt: QuickJSRuntime, ctx: QuickJSContext, call: CallState, promise: QuickJSHandle, parking: Parking): Promise<Settled> {
  for (;;) {
    if (call.isCancelled()) return { kind: 'cancelled' };
    if (call.allocationFailed || call.memoryExhausted()) return { kind: 'unsettled' };
    if (call.timedOut()) return { kind: 'timeout' };
    call.deliverLanded();
    if (call.allocationFailed) return { kind: 'unsettled' };
    const jobs = rt.executePendingJobs();
    if (jobs.error) jobs.error.dispose();
    const state = ctx.getPromiseState(promise);
    if (state.type === 'fulfilled') {
      // For a non-promise the state's value is `promise` itself: hand back a copy we own.
      return { kind: 'fulfilled', handle: state.notAPromise ? promise.dup() : state.value };
    }
    if (state.type === 'rejected') return { kind: 'rejected', handle: state.error };
    if (call.isCancelled()) return { kind: 'cancelled' };
    if (call.timedOut()) return { kind: 'timeout' };
    if (call.hasLanded || rt.hasPendingJob()) continue;
    if (call.pendingHostWork === 0) return { kind: 'unsettled' };
    parking.park();
    await call.nextWake();
    if (call.isCancelled()) return { kind: 'cancelled' };
    if (call.timedOut()) return { kind: 'timeout' };
    parking.resume();
  }
}

function outcomeError(settled: Settled, ctx: QuickJSContext, call: CallState, explain: QuickJSHandle, req: SandboxRequest): SandboxError | undefined {
  switch (settled.kind) {
    case 'fulfilled':
      return undefined;
    case 'timeout':
      return timeoutError(req);
    case 'cancelled':
      throw new SandboxCancelledError('the call was cancelled');
    case 'unsettled':
      return {
        kind: 'thrown',
        name: 'UnsettledPromiseError',
        message: 'the code returned a promise that can never settle: nothing it waits for is pending',
        stack: '',
      };
    case 'rejected':
      return describeError(ctx, call, explain, settled.handle!, 'thrown', req);
  }
}

/** Thrown when the caller cancelled: there is no outcome to report. */
export class SandboxCancelledError extends Error {
  override name = 'SandboxCancelledError';
}

function timeoutError(req: SandboxRequest): SandboxError {
  return { kind: 'timeout', name: 'TimeoutError', message: `the code ran longer than its ${req.timeoutMs} ms limit`, stack: '' };
}

function memoryError(req: SandboxRequest): SandboxError {
  return {
    kind: 'memory-limit',
    name: 'MemoryLimitError',
    message: `the code used more than its ${Math.round(req.memoryBytes / 1048576)} MiB memory limit`,
    stack: '',
  };
}

/** Error messages are bounded like logs: a client's default gRPC message limit is 4 MiB. */
const MAX_ERROR_MESSAGE_CHARS = 64 * 1024;

function capped(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max)} [truncated]`;
}

function isOutOfMemory(e: { message?: unknown; name?: unknown } | undefined): boolean {
  return typeof e === 'object' && e !== null && e.message === 'out of memory';
}

/** Turns a guest exception into a SandboxError, classifying interrupts and out-of-memory. */
function describeError(
  ctx: QuickJSContext,
  call: CallState,
  explain: QuickJSHandle,
  exception: QuickJSHandle,
  kind: UserErrorKind,
  req: SandboxRequest,
): SandboxError {
  const redact = call.redact;
  if (call.isCancelled()) throw new SandboxCancelledError('the call was cancelled');
  if (call.memoryExhausted() || call.allocationFailed) return memoryError(req);
  if (call.timedOut()) return timeoutError(req);
  let name = 'Error';
  let message = 'the thrown value could not be described';
  let stack = '';
  const r = ctx.callFunction(explain, ctx.undefined, exception);
  if (r.error) {
    if (call.timedOut()) return timeoutError(req);
  } else {
    // The prelude returns JSON text: strings cross as C strings, and a NUL in a message would cut it.
    const parts = JSON.parse(ctx.getString(r.value)) as unknown;
    if (Array.isArray(parts) && parts.length === 3) [name, message, stack] = parts.map(String) as [string, string, string];
  }
  if (name === 'InternalError' && message === 'out of memory') return memoryError(req);
  // When QuickJS cannot even allocate the out-of-memory error it throws null.
  if (name === 'Error' && message === 'Uncaught null' && call.nearMemoryCap()) return memoryError(req);
  if (name === 'InternalError' && message === 'interrupted' && call.timedOut()) return timeoutError(req);
  // evalCode fails for a syntax error, but also when parsing itself runs out of memory or stack.
  const finalKind: UserErrorKind = kind === 'syntax' && name !== 'SyntaxError' ? 'thrown' : kind;
  const userLines = countLines(req.code);
  const shownStack = userStack(stack, userLines);
  message = teachingMessage(name, message, shownStack, req.code, sandboxNames());
  if (finalKind === 'syntax' && shownStack === '') message += ' (at the end of the code)';
  return {
    kind: finalKind,
    // Redacted before it is cut: a secret at the cut would otherwise leak in part.
    name: capped(redact(name), 200),
    message: capped(redact(message), MAX_ERROR_MESSAGE_CHARS),
    stack: redact(shownStack),
  };
}

/** Most warnings about `ld.*` promises one call logs; the rest are counted in one more. */
const MAX_PROMISE_WARNINGS = 5;

/**
 * Warns about the `ld.*` calls whose promise was still pending when the code returned (their result is
 * lost, and their effects may or may not happen) or was rejected with nothing awaiting it (the failure
 * would otherwise vanish: an egress refusal, a 5xx turned into an error).
 */
function warnAboutLdPromises(ctx: QuickJSContext, call: CallState, report: QuickJSHandle): void {
  const r = ctx.callFunction(report, ctx.undefined);
  if (r.error) return; // the deadline passed or memory ran out while listing: the outcome says so
  const entries = JSON.parse(ctx.getString(r.value)) as [string, 'pending' | 'rejected', string?][];
  for (const [i, [name, state, reason]] of entries.entries()) {
    if (i === MAX_PROMISE_WARNINGS) {
      call.logs.warn(`… and ${entries.length - i} more ld.* calls not awaited`);
      break;
    }
    call.logs.warn(
      state === 'pending'
        ? `ld.${name} was still pending when the code returned: its result is lost (await it before returning)`
        : `ld.${name} failed and nothing awaited it: ${reason ?? ''} (await it, or add .catch)`,
    );
  }
}

const namesOf = new WeakMap<object, SandboxNames>();

/** The names the sandbox offers (for "did you mean"): the registered `ld.*` built-ins and the globals. */
function sandboxNames(): SandboxNames {
  const bindings = registeredBuiltins().bindings;
  let names = namesOf.get(bindings);
  if (names) return names;
  names = {
    ld: ['log', ...bindings.filter((b) => !b.global).map((b) => b.guest)],
    globals: ['data', 'ld', 'Buffer', 'FormData', ...bindings.filter((b) => b.global).map((b) => b.guest), ...INTRINSICS],
  };
  namesOf.set(bindings, names);
  return names;
}

const INTRINSICS = ['JSON', 'Math', 'Date', 'Object', 'Array', 'String', 'Number', 'Boolean', 'Promise', 'Error', 'TypeError', 'RangeError'];

/** Serialises the returned value inside the guest (under the deadline), copies it out and validates its shape. */
function readResult(
  ctx: QuickJSContext,
  call: CallState,
  serialize: QuickJSHandle,
  token: string,
  value: QuickJSHandle,
  req: SandboxRequest,
  limits: SandboxLimits,
): ResultParts | { error: SandboxError } {
  const r = ctx.callFunction(serialize, ctx.undefined, value, ctx.newNumber(limits.maxResultBytes));
  if (r.error) {
    const d = ctx.dump(r.error) as { name?: string; message?: string };
    if (call.timedOut()) return { error: timeoutError(req) };
    if (isOutOfMemory(d)) return { error: memoryError(req) };
    return {
      error: {
        kind: 'invalid-result',
        name: 'InvalidResultError',
        message: call.redact(`the returned value cannot be delivered: ${String(d?.message ?? d)}`),
        stack: '',
      },
    };
  }
  const { json, binaries } = readGuestPair(ctx, r.value);
  try {
    // The marker token is random per call and never visible to user code: without it there is no marker.
    const plain = binaries.length === 0 && !json.includes(token);
    return validateResult(req.resultKind, { json, plain, parse: () => parseWithBinaries(json, token, binaries) });
  } catch (err) {
    if (err instanceof InvalidResultError) {
      return { error: { kind: 'invalid-result', name: 'InvalidResultError', message: call.redact(err.message), stack: '' } };
    }
    throw err;
  }
}

/**
 * A WebAssembly trap or an abort inside the module: the module is corrupt and is dropped. When its
 * memory reached the cap, this was the memory limit; otherwise it is a machinery failure.
 */
function classifyTrap(cm: CappedModule, err: unknown, req: SandboxRequest): SandboxError | undefined {
  if (err instanceof SandboxCancelledError) throw err;
  if (err instanceof OutOfMemoryDuringSetup) return memoryError(req);
  cm.broken = true;
  if (err instanceof GuestAllocationError) return memoryError(req);
  const nearCap = cm.memory.buffer.byteLength >= cm.capBytes - 1024 * 1024;
  if (nearCap) return memoryError(req);
  // Deep recursion inside QuickJS's own C code (JSON.parse of '[[[[…', String() of a nested array) can
  // exhaust the thread's V8 stack before QuickJS's stack check fires: the user's code did that.
  if (err instanceof RangeError && /call stack/i.test(err.message)) {
    return { kind: 'thrown', name: 'InternalError', message: 'stack overflow (the data is nested too deeply)', stack: '' };
  }
  return undefined;
}
