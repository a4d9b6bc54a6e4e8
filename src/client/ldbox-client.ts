/**
 * `ldbox/client` (package.json "exports"; named after the export, as the shared layer has no index.ts):
 * typed clients of the runner and the control plane, for services that call ldbox. The generated code is
 * exported too (`ldbox/gen/…`), and its services are re-exported here.
 */
export { type ControlPlaneClient, createControlPlaneClient } from './control-plane-client.js';
export {
  type CallOptions,
  type ClientOptions,
  createRunnerClient,
  type ExecuteErrorKind,
  type ExecuteOptions,
  type ExecuteResult,
  type ResultKindName,
  type RunnerClient,
  type RunnerClientOptions,
} from './runner-client.js';
export { ConnectError, Code } from '@connectrpc/connect';
export { RunnerService } from '../gen/ldbox/runner/v1/runner_pb.js';
export { WorkflowService, WorkspaceService } from '../gen/ldbox/workflows/v1/workflows_pb.js';
