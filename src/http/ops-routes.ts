/**
 * The operator's plain-HTTP routes, the same on every role's port (gateway, executor, runner):
 * - `GET /healthz` → 200 `{"status":"ok"}` while the process serves;
 * - `GET /readyz` → 200 `{"status":"ready", …details}` when the role takes work, else 503
 *   `{"status":"not_ready", …details}`; the details are the role's own flat fields that say why (the
 *   gateway's `nats`, `streamReady`, …; the executor's `consumerReady`, …; none for the runner);
 * - `GET /metrics` → Prometheus text, or 500 `internal_error` when collecting fails.
 * `HEAD` answers as `GET` without the body; any other method or path is left to the role (returns undefined).
 * A query string does not change the route (`/readyz?verbose=1`).
 *
 * None of them asks for a token: probes and Prometheus scrapers do not carry one, and the answers hold no
 * secrets (states, counts, timings; no code, input, auth or request ids). Timeouts and connection limits
 * are the port's own (connection-limits.ts), the same for every role.
 *
 * Tests: test/http/ops-routes.test.ts; per role, test/gateway/control-plane.test.ts,
 * test/executor/executor.test.ts, test/runner/http1-port.test.ts.
 */
import type { Registry } from 'prom-client';
import type { Logger } from '../logging/logger.js';
import { type JsonResponse, sendJson } from './send-json.js';

/** What the routes need of a request: node:http's IncomingMessage and node:http2's compat request both fit. */
export interface OpsRequest {
  readonly method?: string | undefined;
  readonly url?: string | undefined;
}

/** What the routes need of a response (see {@link JsonResponse}). */
export interface OpsResponse extends JsonResponse {
  end(body: string | Buffer): unknown;
}

/** The route that answered; the gateway labels its request metrics with it. */
export type OpsRoute = 'healthz' | 'readyz' | 'metrics';

export interface OpsRoutesOptions {
  /** What `/readyz` answers. */
  ready: () => boolean;
  /** Extra fields of the `/readyz` body, read on each probe. */
  readyDetails?: () => Record<string, unknown>;
  registry: Registry;
  log: Logger;
}

/** Answers an ops request and returns its route, or returns undefined (and writes nothing) for any other request. */
export type OpsRoutes = (req: OpsRequest, res: OpsResponse) => OpsRoute | undefined;

const NO_STORE = { 'cache-control': 'no-store' };

/** Builds the routes for one role. */
export function createOpsRoutes(options: OpsRoutesOptions): OpsRoutes {
  const { ready, readyDetails, registry, log } = options;
  return (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return undefined;
    const route = opsRouteOf(req.url ?? '');
    switch (route) {
      case 'healthz':
        sendJson(res, 200, { status: 'ok' }, NO_STORE);
        break;
      case 'readyz': {
        const ok = ready();
        sendJson(res, ok ? 200 : 503, { status: ok ? 'ready' : 'not_ready', ...readyDetails?.() }, NO_STORE);
        break;
      }
      case 'metrics':
        registry.metrics().then(
          (text) => {
            res.writeHead(200, { 'content-type': registry.contentType, ...NO_STORE });
            res.end(text);
          },
          (err: unknown) => {
            log.error({ err: err instanceof Error ? err.message : String(err) }, 'metrics failed');
            sendJson(res, 500, { error: { code: 'internal_error', message: 'metrics failed' } }, NO_STORE);
          },
        );
        break;
    }
    return route;
  };
}

function opsRouteOf(url: string): OpsRoute | undefined {
  const q = url.indexOf('?');
  switch (q === -1 ? url : url.slice(0, q)) {
    case '/healthz':
      return 'healthz';
    case '/readyz':
      return 'readyz';
    case '/metrics':
      return 'metrics';
    default:
      return undefined;
  }
}
