/**
 * Bench-only: PART 2 EXTENSION POINT of bench/webhook.ts — end-to-end latency, from a webhook POST to the
 * execution record reaching `succeeded`.
 *
 * Not implemented yet: it needs the executor (the role that consumes the JOBS stream, runs the workflow's
 * nodes in the runner and writes the execution record), which does not exist yet. Until then
 * {@link measureEndToEnd} returns `undefined` and bench/webhook.ts prints that part 2 was not measured; it
 * must never report invented figures.
 *
 * To add it (the lead, once the executor exists): start a gateway, a runner and an executor against
 * `natsUrl` (each in its own child process, as bench/lib/webhook-server.ts does for the gateway), create a
 * workflow through the control plane, then for N webhooks (sequentially for the unloaded latency, and at
 * a fixed rate below the gateway's capacity for the loaded one) take the time from sending the POST to the
 * `ldbox-executions` KV entry `<workflowId>.<executionId>` showing `status: "succeeded"` (a KV watch on
 * `<workflowId>.*`, not polling), and return the percentiles below.
 */

export interface EndToEndResult {
  /** Webhooks measured (each one 202 and then `succeeded`). */
  executions: number;
  /** Webhooks that did not reach `succeeded` within the timeout. */
  failed: number;
  /** POST sent → execution `succeeded`, ms. */
  p50Ms: number;
  p99Ms: number;
  /** Optional breakdown, ms: POST → 202, 202 → `running`, `running` → `succeeded`. */
  stagesP50Ms?: { accept: number; queue: number; run: number };
}

/**
 * Part 2: webhook → succeeded-execution latency against the nats-server at `natsUrl` (the one part 1
 * used; its streams are purged by then). Returns `undefined` while not implemented (no executor yet).
 */
export async function measureEndToEnd(natsUrl: string): Promise<EndToEndResult | undefined> {
  void natsUrl;
  return undefined;
}
