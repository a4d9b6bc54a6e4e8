/**
 * The HTTP gateway: the webhook route, the control plane (WorkflowService, WorkspaceService), health,
 * readiness and metrics on one HTTP/1.1 port. See gateway-server.ts. The composition root (src/cli,
 * src/dev) loads the gateway's config and starts the gateway through this file; it reads the gateway's
 * settings list (for `--help` and the unknown-variable warning) from gateway-config.ts, a second entry
 * that does not load the gateway (test/architecture/dependency-rule.test.ts).
 */
export { type GatewayConfig, loadGatewayConfig } from './gateway-config.js';
export { startGateway, type Gateway, type StartGatewayOptions } from './gateway-server.js';
