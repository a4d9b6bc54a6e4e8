/**
 * The executor's spending-cap check, made before each execution runs (run-execution.ts): the webhook's
 * admission check in the gateway reads the rolled-up spend, which lags by up to a roll-up interval, so a
 * burst could run far past the budget; this one reads the exact spend (record + charges not yet rolled up,
 * WorkspaceRepository.get) at the moment the execution is about to start.
 *
 * Largest overshoot: a check sees every charge stored before it began, and an execution charges once it has
 * run. So once the charges reach the budget, every later check refuses; what can still be charged are the
 * executions that passed their check before and had not charged yet — at most the executions running at
 * that moment, N = LDBOX_EXECUTOR_CONCURRENCY × executors. The spend ends below
 * `budget + N × (largest cost of one execution)` (one execution costs at most the sum over its nodes of
 * ceil(timeout / 100 ms)). Test: test/executor/charging.test.ts ("the cap under concurrency").
 *
 * Cost: only workspaces with a budget are read (their budgets come from a watched copy of the workspaces
 * bucket); concurrent checks of one workspace share one read that started after each of them asked.
 */
import type { KvCache } from '../nats/kv-cache.js';
import type { WorkspaceRecord } from '../store/workspace-repository.js';

export interface SpendingCapOptions {
  /** The workspaces bucket, watched: who has a budget at all. */
  budgets: Pick<KvCache<WorkspaceRecord>, 'get' | 'ready'>;
  /** The workspace with its exact spend (WorkspaceRepository.get). */
  read: (workspace: string, now: Date) => Promise<WorkspaceRecord>;
}

/** The message an execution fails with when its workspace's budget is spent. */
export function spendingCapMessage(w: WorkspaceRecord): string {
  return `workspace ${w.name} has spent its monthly budget (${w.spentUnits} of ${w.monthlyBudgetUnits} units): the execution was not run`;
}

/** `check(workspace, now)`: a message when the budget is spent, undefined when the execution may run. */
export function createSpendingCap(opts: SpendingCapOptions): (workspace: string, now: Date) => Promise<string | undefined> {
  const reads = new FreshReads<WorkspaceRecord>();
  return async (workspace, now) => {
    // Until the copy is loaded, every workspace is read (it may have a budget).
    if (opts.budgets.ready && !((opts.budgets.get(workspace)?.monthlyBudgetUnits ?? 0) > 0)) return undefined;
    const w = await reads.get(workspace, () => opts.read(workspace, now));
    return w.monthlyBudgetUnits > 0 && w.spentUnits >= w.monthlyBudgetUnits ? spendingCapMessage(w) : undefined;
  };
}

/**
 * Reads per key where every caller gets the result of a read that started after it asked, and callers
 * asking while a read runs share the next one (at most one read in flight and one waiting, per key).
 */
class FreshReads<T> {
  readonly #state = new Map<string, { next?: Promise<T>; done?: () => void }>();

  get(key: string, read: () => Promise<T>): Promise<T> {
    const entry = this.#state.get(key);
    if (!entry) return this.#start(key, read);
    entry.next ??= new Promise<T>((resolve, reject) => {
      entry.done = () => this.#start(key, read).then(resolve, reject);
    });
    return entry.next;
  }

  #start(key: string, read: () => Promise<T>): Promise<T> {
    const entry: { next?: Promise<T>; done?: () => void } = {};
    this.#state.set(key, entry);
    const running = read();
    const settle = () => {
      if (this.#state.get(key) === entry) this.#state.delete(key);
      entry.done?.();
    };
    running.then(settle, settle);
    return running;
  }
}
