import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import type { RunnerConfig } from '../../src/config/runner-config.js';
import { file_ldbox_runner_v1_runner, RunnerService } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { Health } from '../../src/gen/grpc/health/v1/health_pb.js';
import type { Logger } from '../../src/logging/logger.js';
import { createRunnerPool, type RunnerPool } from '../pool/index.js';
import { bearerAuth } from './bearer-auth.js';
import { withSpecGrpcMessage } from './grpc-message-encoding.js';
import { createHealthStatus, registerHealthService, type HealthStatus } from './health-service.js';
import { registerReflectionService } from './reflection-service.js';
import { registerRunnerService } from './runner-service.js';

export interface RunnerServer {
  /** The bound port (useful when the config asked for port 0). */
  readonly port: number;
  readonly pool: RunnerPool;
  readonly health: HealthStatus;
  /** Stops taking calls, lets running ones finish (up to `timeoutMs`), then closes connections and workers. */
  close(timeoutMs?: number): Promise<void>;
}

/**
 * Starts the runner: RunnerService, grpc.health.v1 and server reflection on one HTTP/2 cleartext port,
 * speaking gRPC, gRPC-Web and Connect.
 */
export async function startRunnerServer(config: RunnerConfig, log: Logger): Promise<RunnerServer> {
  const pool = createRunnerPool(config.pool);
  const health = createHealthStatus();
  const open = new Set([Health.typeName]);
  const handler = connectNodeAdapter({
    grpc: true,
    grpcWeb: true,
    connect: true,
    // A request holds code + input + auth; a response the result plus logs.
    readMaxBytes: config.maxCodeBytes + 2 * config.maxInputBytes + 64 * 1024,
    writeMaxBytes: config.pool.maxResultBytes * 2 + config.pool.maxLogChars * 2 + 64 * 1024,
    interceptors: config.token ? [bearerAuth(config.token, open)] : [],
    routes: (router) => {
      registerRunnerService(router, pool, config, log);
      registerHealthService(router, health);
      registerReflectionService(router, [file_ldbox_runner_v1_runner]);
    },
  });
  const server = http2.createServer(withSpecGrpcMessage(handler));
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  health.set('', 'SERVING');
  health.set(RunnerService.typeName, 'SERVING');
  log.info({ host: config.host, port, workers: config.pool.size, tokenRequired: config.token !== undefined }, 'runner listening');

  return {
    port,
    pool,
    health,
    async close(timeoutMs = 10_000) {
      health.set('', 'NOT_SERVING');
      health.set(RunnerService.typeName, 'NOT_SERVING');
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sessions) s.close();
      await pool.close(timeoutMs);
      for (const s of sessions) s.destroy();
      await closed;
    },
  };
}
