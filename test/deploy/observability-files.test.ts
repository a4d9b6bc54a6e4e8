/**
 * The Grafana dashboard (grafana-dashboard.json) and the Prometheus alert rules (prometheus-alerts.yaml)
 * checked against the roles: a gateway and an executor on a real nats-server and a runner are started,
 * each one's /metrics is scraped, and every metric name a panel or a rule uses must be exported by one
 * of them (a histogram's `_bucket`, `_sum` and `_count` series count as its name). Prometheus's own `up`
 * is the only name allowed without a role exporting it.
 *
 * Names are read from PromQL by removing strings, label matchers, range selectors and `by (…)` lists:
 * what is left followed by `(` is a function, the rest are keywords, numbers or metric names.
 */
import { readFileSync } from 'node:fs';
import t, { type Test } from 'tap';
import { loadExecutorConfig } from '../../src/executor/executor-config.js';
import { startExecutor } from '../../src/executor/index.js';
import { silentLogger } from '../../src/logging/logger.js';
import { TEST_DATA_KEY } from '../helpers/data-keys.js';
import { startTestRunner } from '../helpers/runner-harness.js';
import { waitFor } from '../nats/util.js';
import { gatewayFixture } from '../gateway/harness.js';
import { parseYaml } from './yaml-subset.js';

const ROOT = new URL('../../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, ROOT), 'utf8');

/** Series Prometheus makes itself, not a role. */
const PROMETHEUS_OWN = new Set(['up']);
const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan']);

/** The metric names a PromQL expression reads. */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names: string[] = [];
  for (const m of bare.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const after = bare.slice(m.index + m[0].length).trimStart();
    if (after.startsWith('(')) continue; // a function
    if (KEYWORDS.has(m[0].toLowerCase())) continue;
    if (/[0-9.]$/.test(bare.slice(0, m.index))) continue; // a number's exponent or a duration unit
    names.push(m[0]);
  }
  return names;
}

/** Every `expr` of the dashboard's panels (rows' nested panels too), with where it is. */
function dashboardExprs(t: Test): { where: string; expr: string }[] {
  const dashboard = JSON.parse(read('grafana-dashboard.json')) as { panels: Panel[] };
  interface Panel {
    title: string;
    type: string;
    targets?: { expr?: string }[];
    panels?: Panel[];
  }
  const out: { where: string; expr: string }[] = [];
  const walk = (panels: Panel[]) => {
    for (const p of panels) {
      if (p.type !== 'row') {
        t.ok(
          (p.targets ?? []).some((target) => target.expr),
          `panel "${p.title}" has a query`,
        );
      }
      for (const target of p.targets ?? []) if (target.expr) out.push({ where: `dashboard panel "${p.title}"`, expr: target.expr });
      walk(p.panels ?? []);
    }
  };
  walk(dashboard.panels);
  return out;
}

/** Every rule's `expr`, with its alert name. */
function alertExprs(t: Test): { where: string; expr: string }[] {
  const rules = parseYaml(read('prometheus-alerts.yaml')) as { groups: { name: string; rules: { alert: string; expr: string; for?: string }[] }[] };
  return rules.groups.flatMap((g) =>
    g.rules.map((r) => {
      t.type(r.expr, 'string', `alert ${r.alert} has an expr`);
      return { where: `alert ${r.alert}`, expr: String(r.expr) };
    }),
  );
}

/** The names a /metrics text exports: each `# TYPE`, and a histogram's or summary's series. */
function exported(text: string): Set<string> {
  const names = new Set<string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, type] = m as unknown as [string, string, string];
    names.add(name);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(name + s);
    if (type === 'summary') for (const s of ['_sum', '_count']) names.add(name + s);
  }
  return names;
}

async function scrape(port: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  if (res.status !== 200) throw new Error(`GET /metrics on ${port}: ${res.status}`);
  return res.text();
}

t.test('the PromQL name reader', async (t) => {
  t.same(metricNames('histogram_quantile(0.99, sum by (instance, le) (rate(a_bucket{x="y", z=~"5.."}[5m]))) > 0.5'), ['a_bucket']);
  t.same(metricNames('absent(a) or absent(b) and on (job) c == 0'), ['a', 'b', 'c']);
  t.same(metricNames('sum(rate(a_total{s=~"5.."}[$__rate_interval])) / sum(rate(b[1h])) > 1e-3'), ['a_total', 'b']);
});

t.test('every metric the dashboard and the alert rules use is exported by a running role', async (t) => {
  const { gateway, nats } = await gatewayFixture(t);
  const executorConfig = loadExecutorConfig({
    LDBOX_DATA_KEY: TEST_DATA_KEY,
    NATS_URL: nats.url,
    LDBOX_EXECUTOR_PORT: '0',
    LDBOX_RUNNER_URLS: 'http://127.0.0.1:9',
  });
  const executor = await startExecutor(executorConfig, silentLogger(), { nats: { reconnectTimeWaitMs: 100, reconnectJitterMs: 50, connectTimeoutMs: 1000 } });
  t.teardown(() => executor.close(2000));
  await waitFor(() => executor.ready(), 15_000, 'executor ready');
  const runner = await startTestRunner();
  t.teardown(() => runner.close());

  const byRole = {
    gateway: exported(await scrape(gateway.port)),
    executor: exported(await scrape(executor.port)),
    runner: exported(await scrape(runner.process.port)),
  };
  for (const [role, names] of Object.entries(byRole)) {
    t.ok(
      [...names].some((n) => n.startsWith(`ldbox_${role}_`)),
      `the ${role} exports its own series`,
    );
  }
  const all = new Set(Object.values(byRole).flatMap((s) => [...s]));

  const uses = [...dashboardExprs(t), ...alertExprs(t)];
  const used = new Set<string>();
  for (const { where, expr } of uses) {
    const names = metricNames(expr);
    t.ok(names.length > 0, `${where} reads a metric`);
    for (const name of names) {
      used.add(name);
      if (PROMETHEUS_OWN.has(name)) continue;
      t.ok(all.has(name), `${where}: ${name} is exported by a running role`, { expr });
    }
  }
  t.ok(used.size >= 20, `the files use many metrics (${used.size})`);
  for (const name of [
    'ldbox_runner_queue_wait_seconds_bucket',
    'ldbox_runner_user_errors_total',
    'ldbox_runner_sandbox_memory_bytes_bucket',
    'ldbox_runner_pool_workers_replaced_total',
    'ldbox_gateway_nats_connected',
    'ldbox_executor_nats_connected',
  ]) {
    t.ok(used.has(name), `the files use ${name}`);
  }
});
