/**
 * The HTTP gateway: the webhook route, the control plane (WorkflowService, WorkspaceService), health,
 * readiness and metrics on one HTTP/1.1 port. See gateway-server.ts.
 */
export { startGateway, type Gateway, type StartGatewayOptions } from './gateway-server.js';
export { WEBHOOK_ERRORS, WebhookError, type WebhookErrorCode } from './webhook-errors.js';
export { WEBHOOK_PATH_PREFIX } from './webhook-handler.js';
export type { WebhookJob } from '../src/workflows/webhook-job.js';
export { adminAuth, CACHE_WAIT_MS } from './control-plane.js';
