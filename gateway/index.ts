/**
 * The HTTP gateway: the webhook route, the control plane (WorkflowService, WorkspaceService), health,
 * readiness and metrics on one HTTP/1.1 port. See gateway-server.ts. The composition root (src/cli,
 * src/dev) loads the gateway's config (gateway-config.ts: its settings, for `--help` and the
 * unknown-variable warning, and their loader) and starts the gateway through this file only
 * (test/architecture/dependency-rule.test.ts).
 */
export { GATEWAY_SETTINGS, type GatewayConfig, loadGatewayConfig } from './gateway-config.js';
export { startGateway, type Gateway, type StartGatewayOptions } from './gateway-server.js';
