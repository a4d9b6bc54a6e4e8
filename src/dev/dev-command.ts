/**
 * `ldbox dev`: the whole service on one machine, in one process plus a local nats-server.
 *
 * - NATS: `NATS_URL` when set (an existing server is used as it is); otherwise a nats-server is started
 *   with its data in `$LDBOX_DATA_DIR/nats` (default `.ldbox/nats`) on `LDBOX_NATS_PORT` (default 4222;
 *   another free port when 4222 is taken and the port was not asked for; 0 = any free port).
 * - The local nats-server takes only the user `ldbox` with a password generated once and kept in
 *   `$LDBOX_DATA_DIR/nats-password` (mode 0600): the local default is not an open NATS.
 * - Tokens: `LDBOX_ADMIN_TOKEN` / `LDBOX_RUNNER_TOKEN` when set; otherwise generated once and kept in
 *   `$LDBOX_DATA_DIR/admin-token` and `runner-token` (mode 0600), so that a restart keeps working with the
 *   workflows stored in NATS and the README's quickstart can read the token from the file.
 * - Data key: `LDBOX_DATA_KEY` / `LDBOX_DATA_KEY_FILE` when set; otherwise generated once into
 *   `$LDBOX_DATA_DIR/data-key` (mode 0600) and reused, so node `auth` values stored by an earlier run open.
 * - Then the runner, the executor (pointed at that runner) and the gateway, each with its usual LDBOX_*
 *   settings (ports 50051, 8081 and 8080 by default; 0 = any free port), and the URLs are printed.
 * - `--cluster N`: N nats-server nodes instead of one (src/nats/nats-cluster.ts), routes and JetStream on
 *   loopback, data in `$LDBOX_DATA_DIR/nats-cluster/<node>`, the same generated user for clients and
 *   routes; the roles get all N as their seed list and the stream and buckets 3 replicas. A node that dies
 *   is reported and the rest carries on (README "Scaling out").
 * - Ctrl-C (or SIGTERM) stops the gateway, the executor, the runner and nats-server, in that order.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { generateDataKey } from '../crypto/secret-box.js';
import { loadDevConfig, type DevConfig } from './dev-config.js';
import type { Env } from '../config/env-parsers.js';
import { loadLogLevel } from '../config/log-config.js';
import { loadExecutorConfig } from '../executor/executor-config.js';
import { loadGatewayConfig } from '../../gateway/gateway-config.js';
import { loadRunnerConfig } from '../../runner/config/index.js';
import { findNatsServerBinary } from '../nats/nats-server-binary.js';
import { portIsFree } from '../net/local-ports.js';
import { type LocalNats, startLocalNats } from './local-nats.js';
import { type NatsCluster, startNatsCluster } from '../nats/nats-cluster.js';
import { ConfigError } from '../config/env-parsers.js';

export interface DevIo {
  stdout(s: string): void;
  stderr(s: string): void;
}

export interface DevOptions {
  /** `--cluster N`: N local nats-server nodes as one JetStream cluster (3 replicas) instead of one server. */
  clusterSize?: number;
}

/** Runs until `stop` resolves (or the local nats-server dies); returns the exit code. */
export async function runDev(env: Env, io: DevIo, stop: Promise<void>, options: DevOptions = {}): Promise<number> {
  const devConfig = loadDevConfig(env);
  const clusterSize = options.clusterSize;
  if (clusterSize !== undefined && (env.NATS_URL ?? '') !== '') {
    throw new ConfigError('ldbox dev --cluster starts its own NATS nodes: unset NATS_URL (or drop --cluster to use that server)');
  }
  const level = loadLogLevel(env);
  const dataDir = resolve(devConfig.dataDir);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const adminToken = env.LDBOX_ADMIN_TOKEN || keptToken(join(dataDir, 'admin-token'));
  const runnerToken = env.LDBOX_RUNNER_TOKEN || keptToken(join(dataDir, 'runner-token'));
  const keyEnv = env.LDBOX_DATA_KEY || env.LDBOX_DATA_KEY_FILE ? {} : { LDBOX_DATA_KEY_FILE: keptDataKey(join(dataDir, 'data-key')) };

  // Every setting is read before anything starts, so a typo does not leave a nats-server behind; the NATS
  // URL and the runner's URL are filled in below, once the local server and the runner have their ports.
  // The in-process runner is called over loopback by the in-process executor: no TLS (README, Security).
  const noTls = { LDBOX_RUNNER_TLS_CERT: undefined, LDBOX_RUNNER_TLS_KEY: undefined, LDBOX_RUNNER_TLS_CLIENT_CA: undefined };
  const runnerConfig = loadRunnerConfig({ ...env, ...noTls, LDBOX_RUNNER_TOKEN: runnerToken });
  // A cluster keeps the stream and buckets on 3 nodes (unless LDBOX_JOBS_REPLICAS says otherwise).
  const replicas = clusterSize !== undefined && (env.LDBOX_JOBS_REPLICAS ?? '') === '' ? { LDBOX_JOBS_REPLICAS: '3' } : {};
  const gatewayConfig = loadGatewayConfig({ ...env, ...keyEnv, ...replicas, LDBOX_ADMIN_TOKEN: adminToken });
  const executorConfig = loadExecutorConfig({ ...env, ...keyEnv, LDBOX_RUNNER_TOKEN: runnerToken });
  // The roles are imported once every setting has been read: a configuration error answers in ~0.2 s
  // instead of ~0.8 s.
  const [{ startExecutor }, { startGateway }, { startRunnerServer }, { createLogger }] = await Promise.all([
    import('../executor/index.js'),
    import('../../gateway/index.js'),
    import('../../runner/server/index.js'),
    import('../logging/logger.js'),
  ]);

  let nats: LocalNats | undefined;
  let cluster: NatsCluster | undefined;
  let natsSettings = gatewayConfig.nats;
  const natsUrl = env.NATS_URL ?? '';
  const cleanups: Array<() => Promise<void>> = [];
  let stopping = false;
  const stopAll = async () => {
    stopping = true;
    for (const c of cleanups.reverse()) await c().catch((err: Error) => io.stderr(`stopping: ${err.message}\n`));
  };
  try {
    if (clusterSize !== undefined) {
      let bin: string;
      try {
        bin = await findNatsServerBinary();
      } catch (err) {
        io.stderr(`ldbox dev --cluster needs nats-server: ${(err as Error).message}\n`);
        return 1;
      }
      const password = keptToken(join(dataDir, 'nats-password'));
      const auth = { user: LOCAL_NATS_USER, password };
      cluster = await startNatsCluster({
        bin,
        dir: join(dataDir, 'nats-cluster'),
        size: clusterSize,
        auth,
        maxPayload: 8 * 1024 * 1024,
        comment: 'Written by `ldbox dev --cluster` on every start; edit LDBOX_* settings instead.',
        logFiles: true,
        pidFiles: true,
        detached: true,
        startTimeoutMs: 15_000,
      });
      cleanups.push(() => cluster!.stop());
      natsSettings = { servers: cluster.nodes.map((n) => `127.0.0.1:${n.port}`), shown: cluster.seedList, user: auth.user, pass: auth.password };
    } else if (natsUrl === '') {
      let bin: string;
      try {
        bin = await findNatsServerBinary();
      } catch (err) {
        io.stderr(`ldbox dev needs nats-server: ${(err as Error).message}\n(or point NATS_URL at a running nats-server with JetStream)\n`);
        return 1;
      }
      const port = await natsPort(devConfig);
      const ignored = NATS_AUTH_SETTINGS.filter((n) => (env[n] ?? '') !== '');
      if (ignored.length > 0)
        io.stderr(
          `${ignored.join(', ')} ignored: NATS credentials and TLS settings are for the server in NATS_URL; the local nats-server uses its generated password\n`,
        );
      const password = keptToken(join(dataDir, 'nats-password'));
      nats = await startLocalNats(bin, join(dataDir, 'nats'), port, { user: LOCAL_NATS_USER, password });
      cleanups.push(() => nats!.stop());
      if (port === -1 && devConfig.natsPort !== 0) {
        io.stderr(`port ${devConfig.natsPort} is in use (another NATS?): the local nats-server takes port ${nats.port}\n`);
      }
      natsSettings = nats.settings;
    }

    const runner = await startRunnerServer(runnerConfig, createLogger('runner', level));
    cleanups.push(() => runner.close());
    const runnerUrl = `http://127.0.0.1:${runner.port}`;

    const runnerUrls = env.LDBOX_RUNNER_URLS ? executorConfig.runnerUrls : [runnerUrl];
    const executor = await startExecutor({ ...executorConfig, nats: natsSettings, runnerUrls }, createLogger('executor', level));
    cleanups.push(() => executor.close());

    const gateway = await startGateway({ ...gatewayConfig, nats: natsSettings }, createLogger('gateway', level));
    cleanups.push(() => gateway.close());
    const gatewayUrl = `http://127.0.0.1:${gateway.port}`;

    const deadline = Date.now() + 30_000;
    while (!(gateway.ready() && executor.ready()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));

    io.stdout(
      [
        '',
        `ldbox dev is ${gateway.ready() && executor.ready() ? 'ready' : 'starting (not ready yet: see the logs)'}:`,
        `  gateway   ${gatewayUrl}   webhooks at /api/hooks/workflows/<id>, control plane, /metrics`,
        `  console   ${gatewayUrl}/console/   log in with the admin token below`,
        `  runner    ${runnerUrl}  gRPC, gRPC-Web and Connect; /metrics`,
        `  executor  http://127.0.0.1:${executor.port}   /healthz /readyz /metrics`,
        `  NATS      ${natsSettings.shown}${nats || cluster ? `   user ${LOCAL_NATS_USER}, password in ${join(dataDir, 'nats-password')}; data in ${join(dataDir, cluster ? 'nats-cluster' : 'nats')}` : ' (NATS_URL)'}`,
        ...(cluster
          ? [
              `  cluster   ${cluster.nodes.length} nodes (${cluster.nodes.map((n) => n.name).join(', ')}), the stream and buckets with ${gatewayConfig.stream.replicas} replicas; kill one to see a failover:`,
              `            kill -9 $(cat ${join(dataDir, 'nats-cluster', cluster.nodes[0]!.name, 'nats-server.pid')})`,
            ]
          : []),
        `  admin token   ${adminToken}${env.LDBOX_ADMIN_TOKEN ? '' : `   (kept in ${join(dataDir, 'admin-token')})`}`,
        `  data key      ${keyEnv.LDBOX_DATA_KEY_FILE ? `kept in ${keyEnv.LDBOX_DATA_KEY_FILE} (back it up: stored node auth values cannot be read without it)` : 'LDBOX_DATA_KEY / LDBOX_DATA_KEY_FILE'}`,
        `  runner token  ${runnerToken}${env.LDBOX_RUNNER_TOKEN ? '' : `   (kept in ${join(dataDir, 'runner-token')})`}`,
        'Ctrl-C stops everything. The README\'s "Quickstart" creates and triggers a workflow with curl.',
        '',
      ].join('\n'),
    );

    // A node of a cluster may die (that is what one tries with it): the roles carry on with the others.
    for (const n of cluster?.nodes ?? []) {
      void n.exited.then((how) => {
        if (!stopping)
          io.stderr(
            `nats-server ${n.name} stopped (${how}); the cluster carries on with the others. See ${join(dataDir, 'nats-cluster', n.name, 'nats-server.log')}\n`,
          );
      });
    }
    const natsDied = nats ? nats.exited.then((how) => how) : new Promise<string>(() => {});
    const reason = await Promise.race([stop.then(() => undefined), natsDied]);
    if (reason !== undefined) {
      io.stderr(`nats-server stopped unexpectedly (${reason}); see ${join(dataDir, 'nats', 'nats-server.log')}. Stopping.\n`);
      await stopAll();
      return 1;
    }
    await stopAll();
    return 0;
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/** NATS settings that only mean something with NATS_URL (the local nats-server has its own user and no TLS). */
const NATS_AUTH_SETTINGS = ['NATS_TOKEN', 'NATS_CREDS', 'NATS_NKEY_SEED_FILE', 'NATS_CA', 'NATS_CERT', 'NATS_KEY'];

/** The user of the local nats-server (its password is generated: `nats-password` in the data dir). */
export const LOCAL_NATS_USER = 'ldbox';

/** The token kept in `file`, created (32 random bytes, base64url, mode 0600) when absent. */
function keptToken(file: string): string {
  if (existsSync(file)) {
    const t = readFileSync(file, 'utf8').trim();
    if (t.length >= 16) return t;
  }
  const t = randomBytes(32).toString('base64url');
  writeFileSync(file, `${t}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return t;
}

/**
 * The path of the data key kept in `file`, created (32 random bytes, base64, mode 0600) when absent. An
 * existing file is never replaced: a bad one is refused by the config loader, since the workflows stored
 * with it would become unreadable.
 */
function keptDataKey(file: string): string {
  if (!existsSync(file)) {
    writeFileSync(file, `${generateDataKey()}\n`, { mode: 0o600, flag: 'wx' });
    chmodSync(file, 0o600);
  }
  return file;
}

/**
 * LDBOX_NATS_PORT, or 4222, or -1 (the server picks a free port) when 4222 is taken and no port was asked
 * for, or when 0 was.
 */
async function natsPort(config: DevConfig): Promise<number> {
  const port = config.natsPort;
  if (port === 0) return -1;
  if (await portIsFree(port)) return port;
  if (config.natsPortAsked) throw new Error(`LDBOX_NATS_PORT ${port} is in use`);
  return -1;
}
