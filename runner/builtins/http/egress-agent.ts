import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import type * as Undici from 'undici';
import { lazyRequire } from '../lazy-require.js';
import { EgressGuard } from './egress-guard.js';

/** undici, loaded when the thread's first request is made (lazy-require.ts). */
export const undiciLib = lazyRequire<typeof Undici>('undici');

/**
 * The undici dispatcher behind ld.request: every connection it opens goes through the egress guard
 * on the address it actually connects to. A host name is resolved by the guarded `lookup` that the
 * socket itself calls, so what is checked is what is connected to (no window between a check and a
 * second resolution, as DNS rebinding would need); an IP-literal host never reaches `lookup`
 * (node:net skips it), so the connector checks it first. Redirects open their connections through
 * the same dispatcher, so every hop is checked.
 */
export interface EgressAgent {
  readonly guard: EgressGuard;
  readonly dispatcher: Undici.Agent;
}

/** Resolves a host name to all of its addresses (`family` 0 for both). Replaceable in tests. */
export type Resolver = (host: string, family: number) => Promise<LookupAddress[]>;

export interface EgressAgentOptions {
  /** Defaults to the system resolver (dns.lookup, as node:net uses). */
  resolve?: Resolver;
  /** Time to establish a connection (TCP and TLS), in ms. */
  connectTimeoutMs?: number;
}

const systemResolve: Resolver = (host, family) =>
  new Promise((resolve, reject) => {
    dnsLookup(host, { all: true, family, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses)));
  });

/** Builds a dispatcher whose connections obey `allow` (LDBOX_EGRESS_ALLOW); throws EgressConfigError on a bad entry. */
export function createEgressAgent(allow: readonly string[], options: EgressAgentOptions = {}): EgressAgent {
  const guard = new EgressGuard(allow);
  const resolve = options.resolve ?? systemResolve;

  const lookup: LookupFunction = (hostname, opts, callback) => {
    const family = typeof opts.family === 'number' ? opts.family : opts.family === 'IPv6' ? 6 : opts.family === 'IPv4' ? 4 : 0;
    resolve(hostname, family).then(
      (found) => {
        // Only the addresses the guard accepts are handed to the socket: a name with one public and
        // one private record connects to the public one, never to the other.
        const usable = found.filter((a) => guard.check(hostname, a.address) === undefined);
        const first = usable[0];
        if (first === undefined) {
          const refused = found[0] && guard.check(hostname, found[0].address);
          callback(refused ?? Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
        } else if (opts.all) {
          callback(null, usable);
        } else {
          callback(null, first.address, first.family);
        }
      },
      (err: NodeJS.ErrnoException) => callback(err, '', 0),
    );
  };

  const { Agent, buildConnector } = undiciLib();
  const base = buildConnector({ lookup, timeout: options.connectTimeoutMs ?? 10_000 });
  const connect: Undici.buildConnector.connector = (opts, callback) => {
    if (isIP(opts.hostname) !== 0) {
      const refused = guard.check(opts.hostname, opts.hostname);
      if (refused) {
        callback(refused, null);
        return;
      }
    }
    base(opts, callback);
  };

  const dispatcher = new Agent({
    connect,
    // Idle connections are kept briefly for the next request of the same call; not for long, since
    // calls are short and each worker serves many.
    keepAliveTimeout: 4_000,
    keepAliveMaxTimeout: 10_000,
  });
  return { guard, dispatcher };
}

const agents = new Map<string, EgressAgent>();

/** The worker's dispatcher for an allow list (one per distinct list, kept for the worker's life). */
export function egressAgentFor(allow: readonly string[]): EgressAgent {
  const key = JSON.stringify(allow);
  let agent = agents.get(key);
  if (agent === undefined) {
    agent = createEgressAgent(allow);
    agents.set(key, agent);
  }
  return agent;
}
