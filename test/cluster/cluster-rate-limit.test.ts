/**
 * Limits across the cluster (issue 11, item 5; README "Scaling out"), with two gateway processes
 * (`bin/ldbox.js gateway`) on one nats-server:
 *
 * - a workflow's rate holds across both gateways: what they admit together over a stretch of load is the
 *   rate's budget for that stretch (r per second plus the burst of r), within ±20 %; with a limiter per
 *   gateway it would be twice that;
 * - a workflow that throttles (`overRate: OVER_RATE_THROTTLE`) answers a burst over its rate with 202 for
 *   every call, and its executions all succeed, started at the rate: spread over at least the time the rate
 *   needs for them (a lower bound only: a busy machine can only spread them further).
 */
import t from 'tap';
import { startNatsServer } from '../helpers/nats-server.js';
import { type RoleProcess, startRole } from '../helpers/role-process.js';
import { TEST_DATA_KEY } from '../helpers/data-keys.js';
import { ADMIN_TOKEN, rpc } from '../gateway/harness.js';
import { waitFor } from '../nats/util.js';

const MiB = 1024 * 1024;

t.test('two gateways, one rate', async (t) => {
  const nats = await startNatsServer({ maxPayload: 8 * MiB });
  t.teardown(() => nats.stop());
  const common = { NATS_URL: nats.url, LDBOX_DATA_KEY: TEST_DATA_KEY, LDBOX_LOG_LEVEL: 'warn' };
  const started: RoleProcess[] = [];
  t.teardown(() => Promise.all(started.map((r) => r.kill('SIGKILL'))));
  const role = async (...args: Parameters<typeof startRole>) => {
    const r = await startRole(...args);
    started.push(r);
    return r;
  };
  const runner = await role('runner', { ...common, LDBOX_POOL_SIZE: '1' });
  const gateways = await Promise.all([1, 2].map(() => role('gateway', { ...common, LDBOX_ADMIN_TOKEN: ADMIN_TOKEN })));
  await role('executor', { ...common, LDBOX_RUNNER_URLS: runner.url, LDBOX_EXECUTOR_CONCURRENCY: '8' });
  await waitFor(async () => (await Promise.all(started.map((r) => r.ready()))).every(Boolean), 60_000, 'every role ready');

  const create = async (rate: number, overRate?: string) => {
    const r = await rpc(gateways[0]!.url, 'CreateWorkflow', {
      name: 'limited',
      workspace: 'ws',
      webhook: { authMethod: 'AUTH_METHOD_NONE' },
      rateLimitPerSecond: rate,
      ...(overRate ? { overRate } : {}),
      nodes: [{ id: 'a', code: 'return { n: data.input.n }', input: { n: '{{trigger.output.body.n}}' } }],
    });
    if (r.status !== 200) throw new Error(`CreateWorkflow: ${r.status} ${r.text}`);
    const id: string = r.json.workflow.id;
    // Both gateways know it once a GET is answered 405 rather than 404 (a GET takes no token).
    for (const g of gateways) {
      await waitFor(async () => (await fetch(`${g.url}/api/hooks/workflows/${id}`)).status === 405, 30_000, 'the workflow at every gateway');
    }
    return r.json.workflow;
  };
  const post = async (g: RoleProcess, id: string, n: number) => {
    const res = await fetch(`${g.url}/api/hooks/workflows/${id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ n }),
    });
    const body = (await res.json()) as { executionId?: string };
    return { status: res.status, executionId: body.executionId, retryAfter: res.headers.get('retry-after') };
  };

  t.test('the rate holds across both gateways within ±20 %', async (t) => {
    const rate = 20;
    const wf = await create(rate);
    t.equal(wf.overRate, undefined, 'refusing is the default (not shown)');
    const statuses: number[] = [];
    const retryAfters = new Set<string>();
    const calls: Promise<void>[] = [];
    const first = performance.now();
    let last = first;
    // 5 s of 50 calls/s at each gateway: 5 times the rate.
    for (let i = 0; performance.now() - first < 5000; i++) {
      for (const g of gateways) {
        calls.push(
          post(g, wf.id, i).then((r) => {
            statuses.push(r.status);
            if (r.retryAfter) retryAfters.add(r.retryAfter);
            last = performance.now();
          }),
        );
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    await Promise.all(calls);
    const admitted = statuses.filter((s) => s === 202).length;
    const refused = statuses.filter((s) => s === 429).length;
    t.equal(admitted + refused, statuses.length, 'every call is 202 or 429');
    // The budget of the stretch: r per second of it, plus the burst of r a rested workflow has.
    const budget = (rate * (last - first)) / 1000 + rate;
    t.comment(`admitted ${admitted} of ${statuses.length} in ${((last - first) / 1000).toFixed(2)} s; budget ${budget.toFixed(0)}`);
    t.ok(admitted >= budget * 0.8 && admitted <= budget * 1.2, `admitted ${admitted} within ±20 % of ${budget.toFixed(0)}`);
    t.same([...retryAfters], ['1'], 'refusals say when to come back');
  });

  t.test('accept and throttle: a burst over the rate is all 202, and runs at the rate', async (t) => {
    const rate = 10;
    const wf = await create(rate, 'OVER_RATE_THROTTLE');
    t.equal(wf.overRate, 'OVER_RATE_THROTTLE');
    const burst = 60;
    const answers = await Promise.all(Array.from({ length: burst }, (_, i) => post(gateways[i % 2]!, wf.id, i)));
    t.same(
      answers.map((a) => a.status),
      Array(burst).fill(202),
      'every call of the burst is accepted',
    );
    const ids = answers.map((a) => a.executionId!);
    const executions = new Map<string, any>();
    await waitFor(
      async () => {
        for (const id of ids) {
          if (executions.get(id)?.status === 'EXECUTION_STATUS_SUCCEEDED') continue;
          const r = await rpc(gateways[1]!.url, 'GetExecution', { id });
          if (r.status === 200) executions.set(id, r.json.execution);
        }
        return ids.every((id) => executions.get(id)?.status === 'EXECUTION_STATUS_SUCCEEDED');
      },
      60_000,
      'every throttled execution to succeed',
    ).catch((err: Error) => {
      const by = new Map<string, number>();
      for (const id of ids) by.set(executions.get(id)?.status ?? 'none', (by.get(executions.get(id)?.status ?? 'none') ?? 0) + 1);
      throw new Error(`${err.message}: ${JSON.stringify(Object.fromEntries(by))}\n${started.map((r) => r.output()).join('\n')}`);
    });
    t.same(
      ids.filter((id, i) => executions.get(id).nodes[0].output.n !== i),
      [],
      'each ran its own call',
    );
    const finished = [...executions.values()].map((e) => Date.parse(e.finishedAt)).sort((a, b) => a - b);
    const span = (finished.at(-1)! - finished[0]!) / 1000;
    // The rate starts the first `rate` at once (its burst) and the other 50 at 10/s: 5 s.
    const needed = (burst - rate) / rate;
    t.comment(`${burst} executions finished over ${span.toFixed(2)} s (the rate needs ${needed} s)`);
    t.ok(span >= needed * 0.8, `spread over ${span.toFixed(2)} s, at least ${needed * 0.8} s`);
  });
});
