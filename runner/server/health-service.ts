import { create } from '@bufbuild/protobuf';
import { Code, ConnectError, type ConnectRouter } from '@connectrpc/connect';
import {
  Health,
  type HealthCheckResponse,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from '../../src/gen/grpc/health/v1/health_pb.js';

/** The statuses a service can be put in; SERVICE_UNKNOWN and UNKNOWN are only ever reported, never set. */
export type HealthState = 'SERVING' | 'NOT_SERVING';

/**
 * The serving status of each service name, as grpc.health.v1 reports it. The empty name `""` stands
 * for the server as a whole. Load balancers and orchestrators (Kubernetes gRPC probes, Envoy) read it.
 */
export interface HealthStatus {
  set(service: string, status: HealthState): void;
  get(service: string): HealthState | undefined;
  /** Calls `listener` with the name of each service whose status changes; returns the unsubscribe. */
  onChange(listener: (service: string) => void): () => void;
  /** How many change listeners (Watch streams) are registered: drops back once cancelled watches release. */
  listenerCount(): number;
}

/**
 * Create an in-memory {@link HealthStatus}. The whole server (`""`) starts SERVING, as in grpc-go and
 * grpc-java, because a process that can answer the health check is up; set it to NOT_SERVING while
 * draining. Only real changes reach Watch streams: setting the current status again is silent.
 */
export function createHealthStatus(): HealthStatus {
  const states = new Map<string, HealthState>([['', 'SERVING']]);
  const listeners = new Set<(service: string) => void>();
  return {
    set(service, state) {
      if (states.get(service) === state) return;
      states.set(service, state);
      for (const listener of [...listeners]) listener(service);
    },
    get: (service) => states.get(service),
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    listenerCount: () => listeners.size,
  };
}

/**
 * Serve grpc.health.v1.Health from `status`, so that standard probes (grpc_health_probe, Kubernetes,
 * Envoy) can ask whether the runner serves. Check answers at once and fails with NOT_FOUND for an
 * unknown service; Watch streams the status (SERVICE_UNKNOWN while unknown) now and on every change
 * until the client cancels.
 */
export function registerHealthService(router: ConnectRouter, status: HealthStatus): void {
  router.service(Health, {
    check(request) {
      return checkResponse(status, request.service);
    },
    watch(request, context) {
      return watchResponses(status, request.service, context.signal);
    },
  });
}

/** The Check answer for `service`, or a NOT_FOUND error as the standard asks for unknown services. */
function checkResponse(status: HealthStatus, service: string): HealthCheckResponse {
  const state = status.get(service);
  if (state === undefined) {
    throw new ConnectError(`unknown service ${JSON.stringify(service)}`, Code.NotFound);
  }
  return create(HealthCheckResponseSchema, { status: toServingStatus(state) });
}

/** The wire enum value for a status, with SERVICE_UNKNOWN for a service never set. */
function toServingStatus(state: HealthState | undefined): ServingStatus {
  switch (state) {
    case 'SERVING':
      return ServingStatus.SERVING;
    case 'NOT_SERVING':
      return ServingStatus.NOT_SERVING;
    case undefined:
      return ServingStatus.SERVICE_UNKNOWN;
  }
}

/**
 * The Watch stream: the current status, then each different one, until `signal` aborts. A slow reader
 * gets the latest status rather than every intermediate one, which the standard allows.
 */
async function* watchResponses(status: HealthStatus, service: string, signal: AbortSignal): AsyncGenerator<HealthCheckResponse> {
  const wakeUp = createWakeUp();
  const release = listenForChanges(status, service, signal, wakeUp.notify);
  try {
    let sent: ServingStatus | undefined;
    while (!signal.aborted) {
      const current = toServingStatus(status.get(service));
      if (current !== sent) {
        sent = current;
        yield create(HealthCheckResponseSchema, { status: current });
        continue;
      }
      await wakeUp.next();
    }
  } finally {
    release();
  }
}

/**
 * Call `onEvent` when `service` changes or `signal` aborts. The status listener is dropped on abort
 * itself, not only when the stream ends, so a watch abandoned mid-write still leaks nothing.
 * Returns the function that drops both listeners.
 */
function listenForChanges(status: HealthStatus, service: string, signal: AbortSignal, onEvent: () => void): () => void {
  if (signal.aborted) return () => {};
  const unsubscribe = status.onChange((changed) => {
    if (changed === service) onEvent();
  });
  const release = (): void => {
    unsubscribe();
    signal.removeEventListener('abort', onAbort);
  };
  const onAbort = (): void => {
    release();
    onEvent();
  };
  signal.addEventListener('abort', onAbort, { once: true });
  return release;
}

/** A level-triggered signal: `notify` before or during `next()` makes `next()` resolve. */
function createWakeUp(): { notify: () => void; next: () => Promise<void> } {
  let pending = false;
  let resolve: (() => void) | undefined;
  return {
    notify() {
      if (resolve) {
        resolve();
        resolve = undefined;
      } else {
        pending = true;
      }
    },
    next() {
      if (pending) {
        pending = false;
        return Promise.resolve();
      }
      return new Promise<void>((r) => {
        resolve = r;
      });
    },
  };
}
