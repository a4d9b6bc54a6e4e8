import { randomBytes } from 'node:crypto';
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime } from 'quickjs-emscripten';
import { validateResult, InvalidResultError } from '../results/index.js';
import { CallState } from './call-state.js';
import { GUEST_PRELUDE } from './guest-prelude.js';
import { createHostFunctions } from './host-functions.js';
import { LogBuffer } from './log-buffer.js';
import { createRedactor } from './redactor.js';
import type { SandboxError, SandboxOutcome, SandboxRequest, UserErrorKind } from './types.js';
import { USER_FILE, countLines, userStack, wrapUserCode } from './user-stack.js';
import type { CappedModule } from './wasm-modules.js';

/** Operator limits that shape every call (from config). */
export interface SandboxLimits {
  /** Largest result (JSON text + binary bytes). Larger results fail with ERROR_KIND_INVALID_RESULT. */
  maxResultBytes: number;
  maxLogEntries: number;
  maxLogChars: number;
  /** QuickJS stack limit; must stay well inside the worker's V8 stack (see notes on stack limits). */
  maxStackBytes: number;
}

/**
 * How the caller cancels a call. `isCancelled` is polled by QuickJS's interrupt handler, so it must
 * answer synchronously (a busy loop in the guest never lets an abort event be delivered); `signal`
 * wakes a call that is awaiting host work.
 */
export interface CancelSource {
  signal: AbortSignal;
  isCancelled(): boolean;
}

/** Thrown for a failure of the sandbox machinery itself (not of user code): the caller reports INTERNAL. */
export class SandboxInternalError extends Error {}

interface Settled {
  kind: 'fulfilled' | 'rejected' | 'timeout' | 'cancelled' | 'unsettled';
  handle?: QuickJSHandle;
}

/**
 * Runs one call of user code in a fresh QuickJS runtime + context on `cm`'s module, and always tears
 * both down. User-code failures come back as `outcome.error`; only a failure of the machinery throws.
 * `cm.broken` is set when the module must not be reused.
 */
export async function runSandbox(
  cm: CappedModule,
  req: SandboxRequest,
  limits: SandboxLimits,
  cancel?: CancelSource,
): Promise<SandboxOutcome> {
  const cancelSignal = cancel?.signal;
  const started = performance.now();
  const redact = createRedactor(req.secrets);
  const logs = new LogBuffer(redact, limits.maxLogEntries, limits.maxLogChars);
  const memoryAtStart = cm.memory.buffer.byteLength;
  let rt: QuickJSRuntime | undefined;
  let ctx: QuickJSContext | undefined;
  let call: CallState | undefined;
  const owned: QuickJSHandle[] = [];
  let error: SandboxError | undefined;
  let result: Omit<SandboxOutcome, 'requestId' | 'logs' | 'wallTimeMs' | 'memoryUsedBytes'> = {};
  const onCancel = () => call?.cancel();

  try {
    rt = cm.module.newRuntime();
    rt.setMaxStackSize(limits.maxStackBytes);
    rt.setMemoryLimit(req.memoryBytes);
    ctx = rt.newContext();
    call = new CallState(ctx, started + req.timeoutMs, logs, redact, cancel?.isCancelled);
    const state = call;
    rt.setInterruptHandler(() => state.shouldInterrupt());
    if (cancelSignal?.aborted) state.cancel();
    cancelSignal?.addEventListener('abort', onCancel, { once: true });

    // Marks binary values in the serialised result; random per call so that user data cannot forge one
    // (and free of NUL: strings cross into QuickJS as C strings).
    const token = `ldbox:bytes:${randomBytes(12).toString('base64url')}`;
    const [serialize, explain] = install(ctx, state, owned, req, limits, token);

    const evaluated = ctx.evalCode(wrapUserCode(req.code), USER_FILE, { type: 'global', strict: true });
    if (evaluated.error) {
      owned.push(evaluated.error);
      error = describeError(ctx, state, explain, evaluated.error, 'syntax', redact, req);
    } else {
      owned.push(evaluated.value);
      const settled = await settle(rt, ctx, state, evaluated.value);
      if (settled.handle) owned.push(settled.handle);
      error = await outcomeError(settled, ctx, state, explain, redact, req);
      if (!error && settled.handle) {
        const out = readResult(ctx, state, serialize, settled.handle, token, req);
        if ('error' in out) error = out.error;
        else result = out;
      }
    }
  } catch (err) {
    const trapped = classifyTrap(cm, err, req);
    if (!trapped) throw err instanceof SandboxInternalError ? err : new SandboxInternalError('sandbox failure', { cause: err });
    error = trapped;
  } finally {
    cancelSignal?.removeEventListener('abort', onCancel);
    teardown(cm, rt, ctx, call, owned);
  }
  // After a memory stop the module holds its high-water mark: give the memory back by replacing it.
  if (error?.kind === 'memory-limit') cm.broken = true;
  return {
    requestId: req.requestId,
    ...(error ? {} : result),
    ...(error ? { error } : {}),
    logs: logs.finish(),
    wallTimeMs: performance.now() - started,
    memoryUsedBytes: Math.max(cm.memory.buffer.byteLength, memoryAtStart),
  };
}

/** Evaluates the prelude and calls it; returns the guest's [serialize, explain] helpers. */
function install(
  ctx: QuickJSContext,
  call: CallState,
  owned: QuickJSHandle[],
  req: SandboxRequest,
  limits: SandboxLimits,
  token: string,
): [QuickJSHandle, QuickJSHandle] {
  const prelude = ctx.evalCode(GUEST_PRELUDE, 'ldbox:prelude', { type: 'global', strict: true });
  if (prelude.error) {
    owned.push(prelude.error);
    throw new SandboxInternalError(`prelude failed: ${JSON.stringify(ctx.dump(prelude.error))}`);
  }
  owned.push(prelude.value);
  const args = [
    createHostFunctions(ctx, call),
    ctx.newString(req.dataJson),
    ctx.newString(token),
    ctx.newNumber(limits.maxResultBytes),
    ctx.newNumber(limits.maxLogChars),
  ];
  owned.push(...args);
  const installed = ctx.callFunction(prelude.value, ctx.undefined, ...args);
  if (installed.error) {
    owned.push(installed.error);
    const d = ctx.dump(installed.error) as { message?: string };
    if (isOutOfMemory(d)) throw new OutOfMemoryDuringSetup();
    throw new SandboxInternalError(`prelude install failed: ${JSON.stringify(d)}`);
  }
  owned.push(installed.value);
  const serialize = ctx.getProp(installed.value, 0);
  const explain = ctx.getProp(installed.value, 1);
  owned.push(serialize, explain);
  return [serialize, explain];
}

class OutOfMemoryDuringSetup extends Error {}

/**
 * Drives the guest's job queue until the returned promise settles. Host work wakes the loop; the
 * wall-clock deadline is enforced here because QuickJS's interrupt only fires while guest code runs.
 */
async function settle(rt: QuickJSRuntime, ctx: QuickJSContext, call: CallState, promise: QuickJSHandle): Promise<Settled> {
  for (;;) {
    if (call.isCancelled()) return { kind: 'cancelled' };
    if (call.timedOut()) return { kind: 'timeout' };
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
    if (call.pendingHostWork === 0 && !rt.hasPendingJob()) return { kind: 'unsettled' };
    if (call.pendingHostWork > 0) await call.nextWake();
  }
}

async function outcomeError(
  settled: Settled,
  ctx: QuickJSContext,
  call: CallState,
  explain: QuickJSHandle,
  redact: (s: string) => string,
  req: SandboxRequest,
): Promise<SandboxError | undefined> {
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
      return describeError(ctx, call, explain, settled.handle!, 'thrown', redact, req);
  }
}

/** Thrown when the caller cancelled: there is no outcome to report. */
export class SandboxCancelledError extends Error {}

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
  redact: (s: string) => string,
  req: SandboxRequest,
): SandboxError {
  if (call.isCancelled()) throw new SandboxCancelledError('the call was cancelled');
  if (call.timedOut()) return timeoutError(req);
  let name = 'Error';
  let message = 'the thrown value could not be described';
  let stack = '';
  const r = ctx.callFunction(explain, ctx.undefined, exception);
  if (r.error) {
    r.error.dispose();
    if (call.timedOut()) return timeoutError(req);
  } else {
    const parts = ctx.dump(r.value) as unknown;
    r.value.dispose();
    if (Array.isArray(parts) && parts.length === 3) [name, message, stack] = parts.map(String) as [string, string, string];
  }
  if (name === 'InternalError' && message === 'out of memory') return memoryError(req);
  if (name === 'InternalError' && message === 'interrupted' && call.timedOut()) return timeoutError(req);
  // evalCode fails for a syntax error, but also when parsing itself runs out of memory or stack.
  const finalKind: UserErrorKind = kind === 'syntax' && name !== 'SyntaxError' ? 'thrown' : kind;
  const userLines = countLines(req.code);
  const shownStack = userStack(stack, userLines);
  if (finalKind === 'syntax' && shownStack === '') message += ' (at the end of the code)';
  return { kind: finalKind, name, message: redact(message), stack: redact(shownStack) };
}

/** Serialises the returned value inside the guest (under the deadline), copies it out and validates its shape. */
function readResult(
  ctx: QuickJSContext,
  call: CallState,
  serialize: QuickJSHandle,
  value: QuickJSHandle,
  token: string,
  req: SandboxRequest,
): Omit<SandboxOutcome, 'requestId' | 'logs' | 'wallTimeMs' | 'memoryUsedBytes'> | { error: SandboxError } {
  const r = ctx.callFunction(serialize, ctx.undefined, value);
  if (r.error) {
    const d = ctx.dump(r.error) as { name?: string; message?: string };
    r.error.dispose();
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
  const pair = r.value;
  try {
    const json = ctx.getProp(pair, 0).consume((h) => ctx.getString(h));
    const binaries: Uint8Array[] = [];
    ctx.getProp(pair, 1).consume((list) => {
      const n = ctx.getProp(list, 'length').consume((h) => ctx.getNumber(h));
      for (let i = 0; i < n; i++) {
        ctx.getProp(list, i).consume((ab) => ctx.getArrayBuffer(ab).consume((view) => binaries.push(view.value.slice())));
      }
    });
    try {
      return validateResult(req.resultKind, json, token, binaries);
    } catch (err) {
      if (err instanceof InvalidResultError) {
        return { error: { kind: 'invalid-result', name: 'InvalidResultError', message: call.redact(err.message), stack: '' } };
      }
      throw err;
    }
  } finally {
    pair.dispose();
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
  const nearCap = cm.memory.buffer.byteLength >= cm.capBytes - 1024 * 1024;
  if (nearCap) return memoryError(req);
  return undefined;
}

function teardown(
  cm: CappedModule,
  rt: QuickJSRuntime | undefined,
  ctx: QuickJSContext | undefined,
  call: CallState | undefined,
  owned: QuickJSHandle[],
): void {
  try {
    call?.close();
    for (let i = owned.length - 1; i >= 0; i--) {
      const h = owned[i]!;
      if (h.alive) h.dispose();
    }
    ctx?.dispose();
    rt?.dispose();
  } catch {
    // A handle we missed or a trapped module: never reuse it.
    cm.broken = true;
  }
}
