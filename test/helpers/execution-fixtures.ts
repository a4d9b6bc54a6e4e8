/** A stored workflow and one of its jobs, as the executor gets them, for tests that drive runExecution directly. */
import { newExecutionId, newWorkflowId } from '../../src/workflows/ids.js';
import type { WebhookJob } from '../../src/workflows/webhook-job.js';
import type { WorkflowRecord } from '../../src/workflows/workflow-model.js';

/** A workflow of workspace `ws` with one node per id, each running `code`. */
export function workflowRecord(nodeIds: string[], code = 'return 1'): WorkflowRecord {
  return {
    id: newWorkflowId(),
    name: 'flow',
    workspace: 'ws',
    nodes: nodeIds.map((id) => ({ id, code, input: {}, auth: {}, limits: { timeoutMs: 0, memoryBytes: 0 } })),
    webhook: { webhookId: 'wh', auth: { method: 'none' } as never },
    rateLimitPerSecond: 0,
    createdAt: new Date().toISOString(),
  };
}

/** A new job (a new execution) of `wf`, with an empty trigger. */
export function jobOf(wf: WorkflowRecord): WebhookJob {
  return {
    v: 1,
    executionId: newExecutionId(new Date()),
    workflowId: wf.id,
    workspace: wf.workspace,
    receivedAt: new Date().toISOString(),
    trigger: { body: {}, query: {} },
  };
}
