/**
 * `ldbox dev --cluster 3` as a user starts it (README "Scaling out"): three nats-server nodes on loopback as
 * one JetStream cluster, the stream with 3 replicas, a webhook served end to end; Ctrl-C stops it all. A
 * bad `--cluster` value is a usage error (exit 2) that starts nothing.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import t from 'tap';
import { BIN, cleanEnv, inParallel, ldbox, nodeChild } from '../helpers/ldbox-cli.js';
import { waitFor } from '../nats/util.js';

// The usage errors start nothing: they run while the cluster starts.
t.jobs = 2;

t.test('--cluster takes 3, 5 or 7', async (t) => {
  const bads = ['2', '4', 'three'];
  const [results, withUrl] = await Promise.all([
    inParallel(bads, (bad) => ldbox(['dev', '--cluster', bad])),
    ldbox(['dev', '--cluster', '3'], { NATS_URL: 'nats://127.0.0.1:4222' }),
  ]);
  for (const [i, bad] of bads.entries()) {
    const r = results[i]!;
    t.equal(r.code, 2, `--cluster ${bad}`);
    t.equal(r.stderr, `--cluster takes the number of NATS nodes: 3, 5 or 7 (an odd number, for a majority), got "${bad}"\nsee 'ldbox dev --help'\n`);
  }
  t.equal(withUrl.code, 2);
  t.equal(withUrl.stderr, 'configuration error: ldbox dev --cluster starts its own NATS nodes: unset NATS_URL (or drop --cluster to use that server)\n');
});

t.test('ldbox dev --cluster 3 serves a webhook end to end on a 3-node cluster; Ctrl-C stops every node', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ldbox-dev-cluster-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const dataDir = join(dir, 'data');
  const child = spawn(...nodeChild([BIN, 'dev', '--cluster', '3']), {
    env: cleanEnv({
      LDBOX_DATA_DIR: dataDir,
      LDBOX_GATEWAY_PORT: '0',
      LDBOX_RUNNER_PORT: '0',
      LDBOX_EXECUTOR_PORT: '0',
      LDBOX_POOL_SIZE: '1',
      LDBOX_LOG_LEVEL: 'warn',
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  await waitFor(() => /ldbox dev is ready/.test(out) || child.exitCode !== null, 90_000, `ldbox dev --cluster ready:\n${out}\n${err}`);
  t.match(out, /ldbox dev is ready/, err);

  const seeds = /NATS +(nats:\/\/127\.0\.0\.1:\d+,nats:\/\/127\.0\.0\.1:\d+,nats:\/\/127\.0\.0\.1:\d+) /.exec(out)?.[1];
  t.ok(seeds, 'the three nodes are printed as a NATS_URL seed list');
  t.match(out, /cluster +3 nodes \(n1, n2, n3\), the stream and buckets with 3 replicas/);
  const gateway = /gateway +(http:\/\/127\.0\.0\.1:\d+)/.exec(out)![1]!;
  const token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
  const password = readFileSync(join(dataDir, 'nats-password'), 'utf8').trim();

  const nc = await connect({ servers: seeds!.split(','), user: 'ldbox', pass: password });
  t.teardown(() => nc.close());
  const info = await (await jetstreamManager(nc)).streams.info('JOBS');
  t.equal(info.config.num_replicas, 3, 'the JOBS stream has 3 replicas');
  t.equal(info.cluster?.replicas?.length, 2, 'a leader and two followers');

  const call = async (method: string, body: unknown) => {
    const res = await fetch(`${gateway}/ldbox.workflows.v1.WorkflowService/${method}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as any };
  };
  const created = await call('CreateWorkflow', {
    name: 'hello',
    workspace: 'ws',
    webhook: { authMethod: 'AUTH_METHOD_NONE' },
    nodes: [{ id: 'greet', code: 'return { greeting: "hello " + data.input.name }', input: { name: '{{trigger.output.body.name}}' } }],
  });
  t.equal(created.status, 200, JSON.stringify(created.json));
  const hook = await fetch(created.json.workflow.webhook.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"Ada"}' });
  t.equal(hook.status, 202);
  const { executionId } = (await hook.json()) as { executionId: string };
  let execution: any;
  await waitFor(
    async () => {
      execution = (await call('GetExecution', { id: executionId })).json.execution;
      return execution?.status === 'EXECUTION_STATUS_SUCCEEDED';
    },
    30_000,
    'the execution to succeed',
  );
  t.same(execution.nodes[0].output, { greeting: 'hello Ada' });

  const pids = ['n1', 'n2', 'n3'].map((n) => Number(readFileSync(join(dataDir, 'nats-cluster', n, 'nats-server.pid'), 'utf8')));
  child.kill('SIGINT');
  t.equal(await exited, 0, `ldbox dev exits 0 on Ctrl-C\n${err}`);
  t.same(
    pids.filter((pid) => existsSync(`/proc/${pid}`)),
    [],
    'every node is stopped',
  );
});
