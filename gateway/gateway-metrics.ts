/**
 * Prometheus metrics of the gateway (`GET /metrics`), on a registry of its own (several gateways in one
 * test process must not collide on prom-client's global registry):
 * - `ldbox_gateway_requests_total{route,status}`: every answered request; `route` is `webhook`,
 *   `control_plane`, `console` (the web console's files), `healthz`, `readyz`, `metrics` or `other` (never the raw path: ids would explode
 *   the label set);
 * - `ldbox_gateway_enqueue_seconds{outcome}`: the JetStream publish of a webhook job until its PubAck
 *   (or failure: `unavailable`, `full`, `too_large`, `rejected`);
 * - `ldbox_gateway_publish_retries_total`: job publishes sent again because the stream could not store
 *   them yet (a leader election, a reconnect: publish-batch.ts);
 * - `ldbox_gateway_nats_connected`: 1 while NATS is connected;
 * - the default Node process metrics (`process_*`, `nodejs_*`).
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export type RouteLabel = 'webhook' | 'control_plane' | 'console' | 'healthz' | 'readyz' | 'metrics' | 'other';

export interface GatewayMetrics {
  registry: Registry;
  request(route: RouteLabel, status: number): void;
  enqueue(seconds: number, outcome: string): void;
  setNatsConnected(connected: boolean): void;
  publishRetry(): void;
}

export function createGatewayMetrics(): GatewayMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: 'ldbox_gateway_requests_total',
    help: 'HTTP requests answered by the gateway, by route and status.',
    labelNames: ['route', 'status'] as const,
    registers: [registry],
  });
  const enqueue = new Histogram({
    name: 'ldbox_gateway_enqueue_seconds',
    help: 'Time from publishing a webhook job to its JetStream PubAck (or failure).',
    labelNames: ['outcome'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const retries = new Counter({
    name: 'ldbox_gateway_publish_retries_total',
    help: 'Webhook job publishes sent again (same Nats-Msg-Id) because the stream could not store them yet.',
    registers: [registry],
  });
  const nats = new Gauge({ name: 'ldbox_gateway_nats_connected', help: '1 while the gateway is connected to NATS.', registers: [registry] });
  return {
    registry,
    request: (route, status) => requests.inc({ route, status: String(status) }),
    enqueue: (seconds, outcome) => enqueue.observe({ outcome }, seconds),
    setNatsConnected: (c) => nats.set(c ? 1 : 0),
    publishRetry: () => retries.inc(),
  };
}
