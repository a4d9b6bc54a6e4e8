/**
 * Repositories over the NATS KV buckets: workflows (+ webhook index), executions (newest-first per
 * workflow), workspace budgets. Each module documents its keys and JSON values.
 */
export {
  decodePageToken,
  encodePageToken,
  isStoreConflict,
  isStoreUnavailable,
  StoreConflictError,
  StoreUnavailableError,
} from './store-errors.js';
export { WorkflowRepository, type WorkflowPage } from './workflow-repository.js';
export {
  ExecutionRepository,
  executionKey,
  toProtoExecution,
  type ExecutionEncoding,
  type ExecutionPage,
  type ExecutionRecord,
  type ExecutionStatusName,
} from './execution-repository.js';
export {
  currentPeriod,
  ensureWorkspacesBucket,
  monthStart,
  nextMonthStart,
  spendingCapRetryAfter,
  toProtoWorkspace,
  WORKSPACES_BUCKET,
  WorkspaceRepository,
  type WorkspaceRecord,
} from './workspace-repository.js';
export { isSecretUnavailable, SecretUnavailableError } from './store-errors.js';
export { decodeWorkflow, encodeWorkflow, needsReencrypt, nodeAuthContext } from './workflow-codec.js';
