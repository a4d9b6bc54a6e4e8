/**
 * One execution of a workflow, from its job: check the workspace's spending cap, render each node's input,
 * call the runner's `Execute`, and keep the execution record up to date (queued → running → succeeded /
 * failed, per-node entries, error, times, cost), charging the workspace just before the final write.
 *
 * The `running` write of an attempt's first node waits LDBOX_RUNNING_RECORD_DELAY_MS ({@link DeferredSave}):
 * a short run writes its final record only.
 *
 * Exactly once in the record, at least once in effect:
 * - a job whose execution is already succeeded or failed is a no-op (a redelivery after the record was
 *   written but before the ack arrived);
 * - a redelivered job whose execution stopped half-way (the executor died) resumes after the last node
 *   that succeeded, reusing its recorded output; the node that was running when the executor died runs
 *   again (the runner cannot tell whether its side effects happened; integration code that must not
 *   repeat them keys them on `data.input`'s execution id or its own idempotency keys);
 * - the cost is charged once per execution: the charge is a message keyed by the execution id that the
 *   ledger stores once and refuses ever after. It is sent together with the final record (which says
 *   `charged: true`), one round trip to NATS instead of two, and the job is acked only once both are
 *   stored. Should either be lost (a crash, a NATS error), the job comes back: a lost record makes the
 *   redelivery finish the execution and charge again, a lost charge makes it find the finished record
 *   and send the charge again ({@link settleCharge}); the ledger refuses a charge it holds, so nothing is
 *   charged twice, and a finished record always gets its charge;
 * - every write of the record is fenced: a compare-and-set on the KV revision this attempt read or last
 *   wrote. An executor that lost its job (its delivery timed out and the job went to another executor,
 *   or it was cut off from NATS meanwhile) finds the record moved on at its next write; it then re-reads
 *   it and stops working on the job (an info log line, no error, no retry): the record stays the newer
 *   attempt's, and its node entries are never duplicated or rolled back by a late writer.
 *
 * Failures:
 * - a template that does not resolve, code that throws / times out / runs out of memory (or returns a
 *   result that cannot be delivered: INVALID_RESULT), an input nested over {@link MAX_INPUT_DEPTH}, a
 *   runner that refuses the request as such (INVALID_ARGUMENT), or an answer that cannot be decoded fail
 *   the execution at once, for good: the request's own data cannot succeed on a retry;
 * - runners that cannot be reached, and NATS errors while writing the record, throw: the job is retried
 *   later, and when its attempts are used up {@link recordExhausted} records the failure.
 */
import type { JsonObject, JsonValue } from '@bufbuild/protobuf';
import { ResultKind } from '../gen/ldbox/runner/v1/runner_pb.js';
import type { Logger } from '../logging/logger.js';
import { cancelledRecord, type ExecutionRecord, type ExecutionRepository, isFinalStatus } from '../store/execution-repository.js';
import { isSecretUnavailable, isStaleRecord } from '../store/store-errors.js';
import type { Charge } from '../store/charge-ledger.js';
import { isTemplateError, renderTemplates } from '../workflows/template.js';
import type { WebhookJob } from '../workflows/webhook-job.js';
import { type NodeRecord, type WorkflowRecord, workflowVersion } from '../workflows/workflow-model.js';
import { nodeCostUnits, nodeEntry, type NodeOutcome, nodeShareBytes, readStoredNode, runError } from './execution-record.js';
import { RunnerRejectedError, type RunnerClients } from './runner-clients.js';
import { MAX_INPUT_DEPTH, UndeliverableResultError, valueDepth } from './runner-wire.js';

/**
 * How an attempt ended. `already_finished`: the record was final when read (or became final by another
 * executor's hand while this attempt ran); `superseded`: another executor took the job over and is still
 * running it, so this attempt stopped without settling anything.
 */
export type RunOutcome = 'succeeded' | 'failed' | 'already_finished' | 'superseded' | 'cancelled';

/**
 * The abort reason of a run stopped by CancelExecution (the executor aborts the run's signal with it when
 * it hears the cancel): the attempt ends `cancelled`, leaving the record as the control plane wrote it.
 */
export class ExecutionCancelledError extends Error {
  override readonly name = 'ExecutionCancelledError';
}
export type ExecuteOutcome = 'ok' | 'code_error' | 'runner_error';

export interface ExecutionObserver {
  /** A node's `Execute` call ended. */
  execute?(seconds: number, outcome: ExecuteOutcome): void;
}

export interface ExecutionDeps {
  executions: Pick<ExecutionRepository, 'read' | 'write'>;
  workflows: { get(id: string): Promise<WorkflowRecord | undefined> };
  /** Where costs go (ChargeLedger): idempotent per execution id. */
  charges: { charge(c: Charge): Promise<'charged' | 'already_charged'> };
  /**
   * The spending-cap check made before an execution runs: resolves a message when its workspace has
   * spent its monthly budget (the execution then fails without running), undefined when it may run.
   * Absent: no check (tests of other behaviour).
   */
  spendingCap?: (workspace: string, now: Date) => Promise<string | undefined>;
  runners: Pick<RunnerClients, 'execute'>;
  /** Deadline of an `Execute` call whose node sets no timeout; a node's own timeout gets the same slack. */
  executeDeadlineMs: number;
  executeDeadlineSlackMs: number;
  /**
   * How long an attempt's first node runs before its `running` record is written (LDBOX_RUNNING_RECORD_DELAY_MS);
   * absent or 0: at once. See {@link DeferredSave}.
   */
  runningRecordDelayMs?: number;
  /** The largest record NATS takes (its `max_payload`). */
  maxRecordBytes: () => number;
  log: Logger;
  observer?: ExecutionObserver;
  now?: () => Date;
}

/** A failure that may pass: the job is given back and tried again. */
export class RetryableRunError extends Error {
  override readonly name = 'RetryableRunError';
  constructor(
    message: string,
    options?: ErrorOptions & {
      /** The node whose call failed, and when it started: its entry may not be in the record (DeferredSave). */
      node?: { id: string; startedAt: Date };
    },
  ) {
    super(message, options);
    this.node = options?.node;
  }
  readonly node: { id: string; startedAt: Date } | undefined;
}

const jsonBytes = (v: unknown): number => Buffer.byteLength(JSON.stringify(v), 'utf8');
const isFinal = (r: ExecutionRecord | undefined): boolean => isFinalStatus(r?.status);

/** The record this attempt writes and the KV revision of its last write or read: the fence of the next write. */
interface Fenced {
  rec: ExecutionRecord;
  revision: number;
  /**
   * The record was not read: a first delivery assumes there is none and creates it (revision 0), which
   * saves a read per execution. Should the create find one (the same job published twice), the attempt
   * starts over from a read ({@link NotFirstError}); nothing has run by then.
   */
  assumedNew?: boolean;
  /**
   * A node's call has been made (or is under way): from then on a create that finds a record means another
   * hand (CancelExecution, a second copy of the job) got there first, and the attempt stops instead of
   * starting over, which would run the node again.
   */
  called?: boolean;
}

/** A first delivery's create found a record: start over, reading it. */
class NotFirstError extends Error {
  override readonly name = 'NotFirstError';
}

/** A fenced write found the record moved on: this attempt stops (caught at the entry points below). */
class RecordMovedOnError extends Error {
  override readonly name = 'RecordMovedOnError';
  constructor(readonly current: ExecutionRecord | undefined) {
    super('the execution record moved on');
  }
}

/**
 * Writes `f.rec` if the record is still at `f.revision`. When it is not, the record is read again: if it
 * holds exactly this write (it landed, only its answer was lost) the attempt goes on, else the record
 * moved on and {@link RecordMovedOnError} stops the attempt.
 */
async function save(f: Fenced, deps: ExecutionDeps): Promise<void> {
  try {
    f.revision = await deps.executions.write(f.rec, f.revision);
    f.assumedNew = false;
    return;
  } catch (err) {
    if (!isStaleRecord(err)) throw err;
    if (f.assumedNew && !f.called) throw new NotFirstError('the execution has a record already', { cause: err });
  }
  const now = await deps.executions.read(f.rec.workflowId, f.rec.id);
  if (now.record !== undefined && JSON.stringify(now.record) === JSON.stringify(f.rec)) {
    f.revision = now.revision;
    return;
  }
  throw new RecordMovedOnError(now.record);
}

/**
 * The `running` write of an attempt's first node, made only if the node's call is still under way after
 * `delayMs`. Most calls take a few milliseconds: their execution then gets one record write (the final
 * one) instead of two, a JetStream store and round trip saved per execution (~0.3 ms of the webhook →
 * succeeded latency, ~8 % of the CPU per execution in bench:webhook's burst). What waits is only a reader's
 * view: the execution lists as queued (its job) until then. A redelivery loses nothing, since this write
 * holds no node result: without it a redelivery starts from the job, as it would have from `running`.
 */
class DeferredSave {
  readonly #timer: NodeJS.Timeout;
  #write: Promise<void> | undefined;

  constructor(f: Fenced, deps: ExecutionDeps, delayMs: number) {
    this.#timer = setTimeout(() => {
      this.#write = save(f, deps);
      this.#write.catch(() => {}); // its error is the attempt's, raised by settle()
    }, delayMs);
  }

  /**
   * Called once the node's call ended, before the record changes again: drops the write if it has not
   * started, else waits for it so that the next write is fenced on its revision; a write that found the
   * record moved on (or failed) ends the attempt here.
   */
  async settle(): Promise<void> {
    clearTimeout(this.#timer);
    await this.#write;
  }
}

/**
 * `nodes` with the `running` entry of `node` added, when its start is not recorded (the attempt ended before
 * its {@link DeferredSave} wrote it); undefined when it is.
 */
function withUnrecordedStart(nodes: JsonValue[], node: { id: string; startedAt: Date }): JsonValue[] | undefined {
  if (nodes.some((n) => readStoredNode(n)?.id === node.id)) return undefined;
  return [...nodes, nodeEntry({ id: node.id, status: 'running', startedAt: node.startedAt }, Number.MAX_SAFE_INTEGER).json];
}

/** Runs `f`; a record that moved on under it ends the attempt quietly (see {@link RecordMovedOnError}). */
async function fenced<T>(ids: { workflowId: string; executionId: string }, deps: ExecutionDeps, f: () => Promise<T>): Promise<T | RunOutcome> {
  try {
    return await f();
  } catch (err) {
    if (!(err instanceof RecordMovedOnError)) throw err;
    if (err.current?.status === 'cancelled') return settleCancelled(ids, deps);
    const finished = isFinal(err.current);
    deps.log.info(
      { workflowId: ids.workflowId, executionId: ids.executionId, status: err.current?.status ?? 'none', attempts: err.current?.attempts },
      finished
        ? 'the execution was finished by another executor meanwhile: this attempt stops'
        : 'the execution was taken over by another executor (this job was redelivered): this attempt stops',
    );
    return finished ? 'already_finished' : 'superseded';
  }
}

/**
 * Runs (or resumes, or recognises as done) the execution of `job`; `attempt` is the job's delivery count.
 * Resolves once the final record is written and the workspace charged; throws to have the job retried.
 */
export async function runExecution(job: WebhookJob, attempt: number, deps: ExecutionDeps, signal?: AbortSignal): Promise<RunOutcome> {
  try {
    return await fenced(job, deps, async () => {
      try {
        return await run(job, attempt, deps, signal, attempt === 1);
      } catch (err) {
        if (!(err instanceof NotFirstError)) throw err;
        return run(job, attempt, deps, signal, false);
      }
    });
  } catch (err) {
    // Cancelled while a node ran: its runner call was aborted; the record is the control plane's.
    if (signal?.aborted && signal.reason instanceof ExecutionCancelledError) {
      return settleCancelled(job, deps, err instanceof RetryableRunError ? err.node : undefined);
    }
    throw err;
  }
}

/**
 * Ends an attempt on a cancelled execution: charges what its nodes cost (once). `stopped`: the node whose
 * call the cancel stopped; when the cancel came before its `running` entry was written (DeferredSave: the
 * control plane saw the execution queued), the entry is added, cancelled, so the record shows it had started.
 * Throws if the record is not cancelled.
 */
async function settleCancelled(
  ids: { workflowId: string; executionId: string },
  deps: ExecutionDeps,
  stopped?: { id: string; startedAt: Date },
): Promise<RunOutcome> {
  const { record, revision } = await deps.executions.read(ids.workflowId, ids.executionId);
  if (record?.status !== 'cancelled') throw new RetryableRunError(`execution ${ids.executionId} was stopped but its record is ${record?.status ?? 'missing'}`);
  deps.log.info({ workflowId: ids.workflowId, executionId: ids.executionId }, 'the execution was cancelled: this attempt stops');
  let rec = record;
  const nodes = stopped && withUnrecordedStart(rec.nodes, stopped);
  if (nodes) {
    rec = cancelledRecord({ ...rec, nodes }, new Date(rec.finishedAt ?? Date.now()));
  } else if (rec.charged !== false) {
    return 'cancelled';
  }
  await settleCharge(rec, deps);
  try {
    await save({ rec, revision, assumedNew: false }, deps);
  } catch (err) {
    if (!(err instanceof RecordMovedOnError)) throw err; // another executor settled it (the ledger keeps one charge)
  }
  return 'cancelled';
}

async function run(job: WebhookJob, attempt: number, deps: ExecutionDeps, signal: AbortSignal | undefined, assumeNew: boolean): Promise<RunOutcome> {
  const now = deps.now ?? (() => new Date());
  const { record: existing, revision } = assumeNew ? { record: undefined, revision: 0 } : await deps.executions.read(job.workflowId, job.executionId);
  if (existing && isFinal(existing)) {
    await settleCharge(existing, deps);
    return 'already_finished';
  }
  const rec = continuedRecord(job, existing, { startedAt: now().toISOString(), attempts: Math.max((existing?.attempts ?? 0) + 1, attempt) });
  const f: Fenced = { rec, revision, assumedNew: assumeNew };

  let workflow;
  try {
    workflow = await deps.workflows.get(job.workflowId);
  } catch (err) {
    // A node's auth that cannot be opened (key not configured, value altered): retrying cannot help.
    if (isSecretUnavailable(err)) {
      deps.log.error(
        { workflowId: job.workflowId, executionId: job.executionId, keyId: err.keyId, err: err.message },
        'a stored node auth cannot be opened: execution failed',
      );
      return finish(f, 'failed', err.message, deps);
    }
    throw err;
  }
  if (!workflow) return finish(f, 'failed', `workflow ${job.workflowId} was deleted before the execution ran`, deps);
  rec.workflowVersion = workflowVersion(workflow);
  const capped = await deps.spendingCap?.(job.workspace, now());
  if (capped !== undefined) {
    deps.log.info({ workflowId: job.workflowId, executionId: job.executionId, workspace: job.workspace }, 'spending cap reached: execution not run');
    return finish(f, 'failed', capped, deps);
  }

  const share = nodeShareBytes(deps.maxRecordBytes(), jsonBytes(job.trigger), workflow.nodes.length);
  const outputs: Record<string, { output: JsonValue }> = Object.create(null);
  let resumeAt = 0;
  for (const [i, node] of workflow.nodes.entries()) {
    const stored = rec.nodes[i] === undefined ? undefined : readStoredNode(rec.nodes[i]!);
    if (!stored || stored.id !== node.id || !stored.succeeded || rec.unrecordedOutputs!.includes(node.id)) break;
    outputs[node.id] = { output: stored.output };
    resumeAt = i + 1;
  }
  rec.nodes = rec.nodes.slice(0, resumeAt);
  rec.unrecordedOutputs = rec.unrecordedOutputs!.filter((id) => workflow.nodes.slice(0, resumeAt).some((n) => n.id === id));
  // One write per node start, no more: the `running` status and the entry of the node that starts go in
  // one write, as do a node's result and the start of the next (rendering the next node's input, the
  // only work in between, is synchronous). Every node's result is stored before the next node's call,
  // so a redelivery still resumes after the last node that succeeded.

  for (const [i, node] of workflow.nodes.entries()) {
    if (i < resumeAt) continue;
    let deferred: DeferredSave | undefined;
    const started = async (startedAt: Date): Promise<void> => {
      // Nodes appear in the record once they start, so a reader sees which one is running.
      rec.nodes[i] = nodeEntry({ id: node.id, status: 'running', startedAt }, share).json;
      // The first node's start stores nothing a redelivery needs (no result yet): it may wait, and a
      // short call skips it. A later node's start carries the previous node's result: stored at once.
      const delayMs = deps.runningRecordDelayMs ?? 0;
      if (i === resumeAt && delayMs > 0) {
        f.called = true;
        deferred = new DeferredSave(f, deps, delayMs);
        return;
      }
      await save(f, deps);
      f.called = true;
    };
    let outcome: NodeRun;
    try {
      outcome = await runNode(node, job, outputs, started, deps, signal, now);
    } finally {
      await deferred?.settle();
    }
    const entry = nodeEntry(outcome.node, share);
    rec.nodes[i] = entry.json;
    rec.costUnits += outcome.costUnits;
    if (!entry.outputRecorded) rec.unrecordedOutputs!.push(node.id);
    if (outcome.node.status === 'failed') return finish(f, 'failed', runError(node.id, outcome.node.error!.message), deps);
    outputs[node.id] = { output: outcome.node.output ?? null };
  }
  return finish(f, 'succeeded', '', deps);
}

/** The `running` record of `job`, carrying over what an earlier attempt recorded (nodes, cost, creation time). */
function continuedRecord(job: WebhookJob, existing: ExecutionRecord | undefined, at: { startedAt: string | null; attempts: number }): ExecutionRecord {
  return {
    id: job.executionId,
    workflowId: job.workflowId,
    workspace: job.workspace,
    status: 'running',
    trigger: job.trigger,
    nodes: existing?.nodes ?? [],
    error: '',
    createdAt: existing?.createdAt ?? job.receivedAt,
    startedAt: at.startedAt,
    finishedAt: null,
    attempts: at.attempts,
    costUnits: existing?.costUnits ?? 0,
    unrecordedOutputs: existing?.unrecordedOutputs ?? [],
    ...(existing?.workflowVersion === undefined ? {} : { workflowVersion: existing.workflowVersion }),
    ...(job.replayOf === undefined ? {} : { replayOf: job.replayOf }),
  };
}

interface NodeRun {
  node: NodeOutcome;
  costUnits: number;
}

async function runNode(
  node: NodeRecord,
  job: WebhookJob,
  outputs: Record<string, { output: JsonValue }>,
  started: (startedAt: Date) => Promise<void>,
  deps: ExecutionDeps,
  signal: AbortSignal | undefined,
  now: () => Date,
): Promise<NodeRun> {
  const startedAt = now();
  let input: JsonObject;
  try {
    input = renderTemplates(node.input, { trigger: { output: job.trigger }, nodes: outputs }, { field: 'input' }) as JsonObject;
  } catch (err) {
    if (!isTemplateError(err)) throw err;
    const message = err.field ? `${err.field}: ${err.message}` : err.message;
    return { node: { id: node.id, status: 'failed', startedAt, finishedAt: now(), error: { kind: 'template', message } }, costUnits: 0 };
  }
  await started(startedAt);
  const timeoutMs = node.limits.timeoutMs > 0 ? node.limits.timeoutMs + deps.executeDeadlineSlackMs : deps.executeDeadlineMs;
  const t0 = performance.now();
  const depth = valueDepth(input, MAX_INPUT_DEPTH);
  if (depth > MAX_INPUT_DEPTH) {
    // The request's own data: no runner can take it, so the node fails once, without retries.
    const message = `the input is nested more than ${MAX_INPUT_DEPTH} levels deep: flatten it or pass deep parts as JSON strings`;
    return { node: { id: node.id, status: 'failed', startedAt, finishedAt: now(), error: { kind: 'runner', message } }, costUnits: 0 };
  }
  let answer;
  try {
    answer = await deps.runners.execute(
      {
        code: node.code,
        input,
        auth: node.auth,
        limits: { timeoutMs: node.limits.timeoutMs, memoryBytes: BigInt(node.limits.memoryBytes) },
        resultKind: ResultKind.GENERIC,
        requestId: `${job.executionId}.${node.id}`,
        // The runner keeps hard-stop penalties per tenant: one workspace's stuck code never refuses another's.
        tenant: job.workspace,
      },
      { timeoutMs, signal },
    );
  } catch (err) {
    deps.observer?.execute?.((performance.now() - t0) / 1000, 'runner_error');
    if (err instanceof RunnerRejectedError || err instanceof UndeliverableResultError) {
      return { node: { id: node.id, status: 'failed', startedAt, finishedAt: now(), error: { kind: 'runner', message: err.message } }, costUnits: 0 };
    }
    throw new RetryableRunError(`node ${JSON.stringify(node.id)}: ${(err as Error).message}`, { cause: err, node: { id: node.id, startedAt } });
  }
  const res = answer.response;
  const costUnits = nodeCostUnits(res.stats?.wallTimeMs ?? 0);
  const finishedAt = now();
  if (res.error) {
    deps.observer?.execute?.((performance.now() - t0) / 1000, 'code_error');
    const e = res.error;
    const message = e.name ? `${e.name}: ${e.message}` : e.message;
    return { node: { id: node.id, status: 'failed', startedAt, finishedAt, logs: res.logs, error: { kind: 'code', message, codeError: e } }, costUnits };
  }
  deps.observer?.execute?.((performance.now() - t0) / 1000, 'ok');
  const output = answer.result ?? null;
  return { node: { id: node.id, status: 'succeeded', startedAt, finishedAt, logs: res.logs, output }, costUnits };
}

/**
 * Charges the execution's cost and writes the final record, at once (see the module comment for why that
 * is safe): resolves once both are stored; throws (the job is retried) if either failed.
 */
async function finish(f: Fenced, status: 'succeeded' | 'failed', error: string, deps: ExecutionDeps): Promise<RunOutcome> {
  const rec = f.rec;
  rec.status = status;
  rec.error = error;
  rec.finishedAt = (deps.now ?? (() => new Date()))().toISOString();
  rec.charged = true;
  const [charged, saved] = await Promise.allSettled([sendCharge(rec, deps), save(f, deps)]);
  // The record's outcome first: one that moved on ends the attempt quietly (fenced), whatever the charge did.
  if (saved.status === 'rejected') throw saved.reason;
  if (charged.status === 'rejected') throw charged.reason;
  return status;
}

/**
 * The charge of a finished record read on a redelivery, sent again: the attempt that wrote the record may
 * have died before its charge was stored, and the ledger refuses it if it was. `charged: false` (a
 * cancelled execution whose nodes' cost is owed) is charged and set; records from before the field
 * existed (undefined) owe nothing.
 */
async function settleCharge(rec: ExecutionRecord, deps: ExecutionDeps): Promise<void> {
  if (rec.charged === undefined) return;
  await sendCharge(rec, deps);
  rec.charged = true;
}

async function sendCharge(rec: ExecutionRecord, deps: ExecutionDeps): Promise<void> {
  if (rec.costUnits <= 0) return;
  await deps.charges.charge({ workspace: rec.workspace, executionId: rec.id, units: rec.costUnits, at: rec.finishedAt ?? new Date().toISOString() });
}

/**
 * Records the failure of a job whose attempts are used up: `error` is what failed the last attempt, or
 * undefined when the job came back after an attempt that died without settling (the executor was
 * killed). `attempts` counts the attempts made, not the delivery that only records the failure. A node
 * left running is marked failed with a runner error. `superseded` when another executor took the job over
 * meanwhile (then nothing is written).
 */
export function recordExhausted(job: WebhookJob, attempts: number, error: unknown, deps: ExecutionDeps): Promise<RunOutcome> {
  return fenced(job, deps, () => exhausted(job, attempts, error, deps));
}

async function exhausted(job: WebhookJob, attempts: number, error: unknown, deps: ExecutionDeps): Promise<RunOutcome> {
  const now = deps.now ?? (() => new Date());
  const { record: existing, revision } = await deps.executions.read(job.workflowId, job.executionId);
  if (existing && isFinal(existing)) {
    await settleCharge(existing, deps);
    return 'already_finished';
  }
  const reason = error === undefined ? 'the executor stopped during the last one' : ((error as Error)?.message ?? String(error));
  const rec = continuedRecord(job, existing, { startedAt: existing?.startedAt ?? null, attempts: Math.max(existing?.attempts ?? 0, attempts) });
  // A node whose call failed before its `running` entry was written (DeferredSave): it is the one left running.
  const failedNode = error instanceof RetryableRunError ? error.node : undefined;
  const nodes = failedNode && withUnrecordedStart(rec.nodes, failedNode);
  if (nodes) {
    rec.nodes = nodes;
    rec.startedAt ??= failedNode.startedAt.toISOString();
  }
  // The node that was running when the last attempt ended: the entry after the succeeded ones, if any.
  const last = rec.nodes.length > 0 ? readStoredNode(rec.nodes[rec.nodes.length - 1]!) : undefined;
  let message = `gave up after ${rec.attempts} ${rec.attempts === 1 ? 'attempt' : 'attempts'}: ${reason}`;
  if (last && !last.succeeded) {
    const startedAt = new Date(String((rec.nodes[rec.nodes.length - 1] as JsonObject).startedAt ?? now().toISOString()));
    rec.nodes[rec.nodes.length - 1] = nodeEntry(
      { id: last.id, status: 'failed', startedAt, finishedAt: now(), error: { kind: 'runner', message } },
      Number.MAX_SAFE_INTEGER,
    ).json;
    message = runError(last.id, message);
  }
  return finish({ rec, revision }, 'failed', message, deps);
}

/** Records a job that could be read only in part (its ids) as a failed execution. */
export async function recordMalformed(ids: { workflowId: string; executionId: string }, message: string, deps: ExecutionDeps): Promise<void> {
  await fenced(ids, deps, () => malformed(ids, message, deps));
}

async function malformed(ids: { workflowId: string; executionId: string }, message: string, deps: ExecutionDeps): Promise<void> {
  const { record: existing, revision } = await deps.executions.read(ids.workflowId, ids.executionId);
  if (existing && isFinal(existing)) return;
  const nowIso = (deps.now ?? (() => new Date()))().toISOString();
  const rec: ExecutionRecord = {
    id: ids.executionId,
    workflowId: ids.workflowId,
    workspace: existing?.workspace ?? '',
    status: 'failed',
    trigger: existing?.trigger ?? { body: {}, query: {} },
    nodes: [],
    error: message,
    createdAt: existing?.createdAt ?? nowIso,
    startedAt: null,
    finishedAt: nowIso,
    attempts: (existing?.attempts ?? 0) + 1,
    costUnits: 0,
    charged: true,
  };
  await save({ rec, revision }, deps);
}
