/**
 * Starts a real runner (HTTP/2 on a random loopback port, real worker pool) and gives tests both
 * clients that matter: the canonical @grpc/grpc-js client and a Connect client.
 */
import * as grpc from '@grpc/grpc-js';
import { create, fromBinary, toBinary, type MessageInitShape } from '@bufbuild/protobuf';
import { ConnectError, createClient, type Client } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport } from '@connectrpc/connect-node';
import { loadRunnerConfig } from '../../runner/config/runner-config.js';
import {
  type ExecuteRequest,
  ExecuteRequestSchema,
  type ExecuteResponse,
  ExecuteResponseSchema,
  type GetPoolStatusResponse,
  GetPoolStatusRequestSchema,
  GetPoolStatusResponseSchema,
  RunnerService,
} from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { silentLogger } from '../../src/logging/logger.js';
import { startRunnerServer, type RunnerServer } from '../../runner/server/runner-server.js';

export type ExecuteInit = MessageInitShape<typeof ExecuteRequestSchema>;

/** A grpc-js client for RunnerService, promisified; errors reject with the grpc-js ServiceError. */
export interface GrpcRunnerClient {
  execute(req: ExecuteInit, options?: { deadlineMs?: number; metadata?: grpc.Metadata; signal?: AbortSignal }): Promise<ExecuteResponse>;
  getPoolStatus(metadata?: grpc.Metadata): Promise<GetPoolStatusResponse>;
  raw: grpc.Client;
}

export interface TestRunner {
  server: RunnerServer;
  url: string;
  grpc: GrpcRunnerClient;
  /** Connect protocol over HTTP/2. */
  connect: Client<typeof RunnerService>;
  /** gRPC protocol through connect-node's own client. */
  connectGrpc: Client<typeof RunnerService>;
  close(): Promise<void>;
}

export async function startTestRunner(env: Record<string, string> = {}): Promise<TestRunner> {
  // No warm-up unless a test asks for one (test/runner/warm-up.test.ts): it would only slow the suite.
  const config = loadRunnerConfig({ LDBOX_RUNNER_PORT: '0', LDBOX_POOL_SIZE: '2', LDBOX_RUNNER_WARMUP_CALLS: '0', ...env });
  const server = await startRunnerServer(config, silentLogger());
  const url = `http://127.0.0.1:${server.port}`;
  const raw = new grpc.Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
  const path = `/${RunnerService.typeName}`;
  const grpcClient: GrpcRunnerClient = {
    raw,
    execute: (req, options = {}) =>
      new Promise((resolve, reject) => {
        const callOptions: grpc.CallOptions = {};
        if (options.deadlineMs !== undefined) callOptions.deadline = Date.now() + options.deadlineMs;
        const call = raw.makeUnaryRequest(
          `${path}/Execute`,
          (m: ExecuteRequest) => Buffer.from(toBinary(ExecuteRequestSchema, m)),
          (b: Buffer) => fromBinary(ExecuteResponseSchema, b),
          create(ExecuteRequestSchema, req),
          options.metadata ?? new grpc.Metadata(),
          callOptions,
          (err, res) => (err ? reject(err) : resolve(res!)),
        );
        options.signal?.addEventListener('abort', () => call.cancel(), { once: true });
      }),
    getPoolStatus: (metadata = new grpc.Metadata()) =>
      new Promise((resolve, reject) => {
        raw.makeUnaryRequest(
          `${path}/GetPoolStatus`,
          (m: ReturnType<typeof create<typeof GetPoolStatusRequestSchema>>) => Buffer.from(toBinary(GetPoolStatusRequestSchema, m)),
          (b: Buffer) => fromBinary(GetPoolStatusResponseSchema, b),
          create(GetPoolStatusRequestSchema),
          metadata,
          {},
          (err, res) => (err ? reject(err) : resolve(res!)),
        );
      }),
  };
  const connect = createClient(RunnerService, createConnectTransport({ baseUrl: url, httpVersion: '2' }));
  const connectGrpc = createClient(RunnerService, createGrpcTransport({ baseUrl: url }));
  return {
    server,
    url,
    grpc: grpcClient,
    connect,
    connectGrpc,
    async close() {
      raw.close();
      await server.close(2000);
    },
  };
}

/** The grpc-js ServiceError a call ends with; undefined when it succeeded. */
export async function grpcError(p: Promise<unknown>): Promise<grpc.ServiceError | undefined> {
  try {
    await p;
  } catch (err) {
    return err as grpc.ServiceError;
  }
  return undefined;
}

/** The ConnectError a call ends with; undefined when it succeeded. */
export async function connectError(p: Promise<unknown>): Promise<ConnectError | undefined> {
  try {
    await p;
  } catch (err) {
    return ConnectError.from(err);
  }
  return undefined;
}
