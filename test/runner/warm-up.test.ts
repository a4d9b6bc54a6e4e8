/**
 * The runner's warm-up (runner/server/warm-up.ts), on real ports: the runner sends itself
 * LDBOX_RUNNER_WARMUP_CALLS Execute calls before it says ready, through its token check and over TLS
 * (its own certificate only), skips it when the port asks for client certificates, keeps no more calls in
 * flight than the pool admits, and counts calls that fail.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import { loadRunnerConfig } from '../../runner/config/runner-config.js';
import { startRunnerServer, type RunnerServer } from '../../runner/server/runner-server.js';
import { warmUp, warmUpInFlight } from '../../runner/server/warm-up.js';
import { anyFreePort } from '../../src/net/local-ports.js';
import { makeTestCertificates } from '../helpers/test-certificates.js';

const certs = makeTestCertificates(t.testdir());

/** A runner with `env`, and the log lines it writes. */
async function start(t: Test, env: Record<string, string>): Promise<{ server: RunnerServer; lines: Array<Record<string, unknown>> }> {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      cb();
    },
  });
  const server = await startRunnerServer(loadRunnerConfig({ LDBOX_RUNNER_PORT: '0', LDBOX_POOL_SIZE: '1', ...env }), pino({ level: 'info' }, sink));
  t.teardown(() => server.close(2000));
  return { server, lines };
}

/** `ldbox_runner_executions_total` by outcome, read from the registry /metrics serves. */
async function executions(server: RunnerServer): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const m of (await server.metrics.metrics()).matchAll(/^ldbox_runner_executions_total\{outcome="(\w+)"\} (\d+)$/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

const warmedUp = (lines: Array<Record<string, unknown>>) => lines.find((l) => l.msg === 'runner warmed up');

t.test('with a token: the warm-up calls pass the token check, and /readyz says ready only after all of them', async (t) => {
  const port = await anyFreePort();
  const calls = 3000;
  const starting = start(t, { LDBOX_RUNNER_PORT: String(port), LDBOX_RUNNER_TOKEN: 'warm-up-token-0123456789', LDBOX_RUNNER_WARMUP_CALLS: String(calls) });
  // Poll /readyz from outside while it starts: the first 200 must come after the last warm-up call.
  let firstReady: Record<string, number> | undefined;
  let notReady = 0;
  let startedUp = false;
  void starting.then(() => (startedUp = true));
  while (!firstReady) {
    const status = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) {
      const { server } = await starting;
      firstReady = await executions(server);
    } else if (status === 503) notReady++;
    else if (startedUp && status === 0) t.fail('the port does not answer after the start');
    // A pause between polls: polling back to back took a core from the warm-up it waits for.
    if (!firstReady) await new Promise((r) => setTimeout(r, 10));
  }
  const { lines } = await starting;
  t.equal(firstReady.ok, calls, `when /readyz first says 200, all ${calls} warm-up calls were answered ok`);
  t.notOk(firstReady.rejected, 'none rejected by the token check');
  t.same(warmedUp(lines) && [warmedUp(lines)!.calls, warmedUp(lines)!.failed, warmedUp(lines)!.level], [calls, 0, 30], 'logged at info');
  t.comment(`/readyz answered 503 ${notReady} times while the runner warmed up`);
});

t.test('over TLS the runner warms up on its own certificate', async (t) => {
  const { server, lines } = await start(t, {
    LDBOX_RUNNER_TLS_CERT: certs.serverCert,
    LDBOX_RUNNER_TLS_KEY: certs.serverKey,
    LDBOX_RUNNER_WARMUP_CALLS: '200',
  });
  t.equal((await executions(server)).ok, 200, '200 warm-up calls answered over TLS');
  t.equal(warmedUp(lines)?.failed, 0);
  t.equal(server.health.get('ldbox.runner.v1.RunnerService'), 'SERVING', 'ready');
});

t.test('with client certificates (mTLS) the warm-up is skipped, and the runner is ready', async (t) => {
  const { server, lines } = await start(t, {
    LDBOX_RUNNER_TLS_CERT: certs.serverCert,
    LDBOX_RUNNER_TLS_KEY: certs.serverKey,
    LDBOX_RUNNER_TLS_CLIENT_CA: certs.caCert,
    LDBOX_RUNNER_WARMUP_CALLS: '200',
  });
  t.equal((await executions(server)).ok ?? 0, 0, 'no call ran');
  t.ok(
    lines.some((l) => String(l.msg).startsWith('runner warm-up skipped')),
    'the skip is logged',
  );
  t.equal(server.health.get('ldbox.runner.v1.RunnerService'), 'SERVING');
});

t.test('the warm-up keeps no more calls in flight than the pool admits: a small pool answers every one', async (t) => {
  // One call at a time and no queue: the pool admits one call at a time, so the warm-up sends one at a time.
  const { server, lines } = await start(t, { LDBOX_RUNNER_MAX_INFLIGHT: '1', LDBOX_POOL_MAX_QUEUE: '0', LDBOX_RUNNER_WARMUP_CALLS: '300' });
  const line = warmedUp(lines);
  t.equal(line?.calls, 300, 'every warm-up call answered');
  t.equal(line?.failed, 0, 'none refused');
  t.equal(line?.level, 30, 'logged at info');
  t.same(await executions(server), { ok: 300, error: 0, rejected: 0, busy: 0, cancelled: 0, internal: 0 }, 'the runner counted 300 ok, nothing else');
});

t.test('how many warm-up calls are in flight', async (t) => {
  const pool = (size: number, maxQueue: number, maxInflight: number) => ({ size, maxQueue, maxInflight });
  t.equal(warmUpInFlight(pool(2, 128, 10_000), 128), 128, 'the default pool of 2 workers: 64 per worker');
  t.equal(warmUpInFlight(pool(1, 64, 10_000), 128), 64, 'one worker');
  t.equal(warmUpInFlight(pool(8, 512, 10_000), 128), 128, 'no more than one HTTP/2 connection carries');
  t.equal(warmUpInFlight(pool(2, 10, 8), 128), 18, 'no more than the pool admits: its queue and the calls it runs at once');
  t.equal(warmUpInFlight(pool(2, 10, 7), 128), 18, 'which it splits evenly between its workers, rounding up');
  t.equal(warmUpInFlight(pool(1, 0, 1), 128), 1, 'at least one');
});

t.test('warm-up calls that fail are counted, not retried, and the warm-up ends', async (t) => {
  // A runner without a warm-up of its own that runs one call at a time and has no queue; 64 calls at once:
  // most are refused with RESOURCE_EXHAUSTED.
  const { server } = await start(t, { LDBOX_RUNNER_MAX_INFLIGHT: '1', LDBOX_POOL_MAX_QUEUE: '0', LDBOX_RUNNER_WARMUP_CALLS: '0' });
  const r = await warmUp({ host: '127.0.0.1', port: server.port, token: undefined, tlsCert: undefined }, 500, 64);
  t.ok(r.failed > 0, `some calls failed (${r.failed})`);
  t.equal(r.answered + r.failed, 500, 'every call is accounted for');
  const counted = await executions(server);
  t.equal(counted.ok, r.answered, 'the runner counted the answered ones as ok');
  t.equal(counted.busy, r.failed, `and the failed ones as busy (RESOURCE_EXHAUSTED): ${JSON.stringify(counted)}`);
});
