import type { Registry } from 'prom-client';
import { RunnerService } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import type { Logger } from '../../src/logging/logger.js';
import type { HealthStatus } from './health-service.js';

/** What the routes need of a request: node:http's IncomingMessage and node:http2's compat request both fit. */
export interface OpsRequest {
  readonly method?: string | undefined;
  readonly url?: string | undefined;
}

/** What the routes need of a response: node:http's ServerResponse and node:http2's compat response both fit. */
export interface OpsResponse {
  writeHead(status: number, headers: Record<string, string>): unknown;
  end(body: string): unknown;
}

export interface OpsRoutesOptions {
  health: HealthStatus;
  registry: Registry;
  log: Logger;
}

/**
 * The operator's plain-HTTP routes, tried before the RPC handler on both protocols:
 * - `GET /healthz` → 200 `{"status":"ok"}` while the process serves;
 * - `GET /readyz` → 200 `{"status":"ready"}` while RunnerService takes calls, 503 `{"status":"not_ready"}`
 *   once the server drains;
 * - `GET /metrics` → Prometheus text (runner-metrics.ts).
 *
 * None of them asks for LDBOX_RUNNER_TOKEN: probes and Prometheus scrapers do not carry it, and the
 * answers hold no secrets (counts, timings, pool sizes; no code, input, auth or request ids).
 *
 * Returns a function that answers the request and returns true, or returns false for any other request.
 */
export function createOpsRoutes(options: OpsRoutesOptions): (req: OpsRequest, res: OpsResponse) => boolean {
  const { health, registry, log } = options;
  return (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const url = req.url ?? '';
    const q = url.indexOf('?');
    switch (q === -1 ? url : url.slice(0, q)) {
      case '/healthz':
        sendJson(res, 200, { status: 'ok' });
        return true;
      case '/readyz': {
        const ready = health.get(RunnerService.typeName) === 'SERVING';
        sendJson(res, ready ? 200 : 503, { status: ready ? 'ready' : 'not_ready' });
        return true;
      }
      case '/metrics':
        registry.metrics().then(
          (text) => {
            res.writeHead(200, { 'content-type': registry.contentType });
            res.end(text);
          },
          (err: unknown) => {
            log.error({ err: err instanceof Error ? err.message : String(err) }, 'metrics failed');
            sendJson(res, 500, { error: { code: 'internal_error', message: 'metrics failed' } });
          },
        );
        return true;
      default:
        return false;
    }
  };
}

function sendJson(res: OpsResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}
