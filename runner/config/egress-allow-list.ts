import { BlockList, isIP } from 'node:net';
import { domainToASCII } from 'node:url';

/**
 * The syntax of LDBOX_EGRESS_ALLOW, read once: the config validates the setting with it at start-up
 * (runner-config.ts) and the runner's egress guard builds its allow list from it
 * (runner/builtins/http/egress-guard.ts, which holds the policy). An entry is a host name (exact,
 * case-insensitive, a trailing dot ignored), `*.suffix` (any name under the suffix, not the suffix
 * itself), an IP address, or a CIDR (`10.0.0.0/8`, `fd00::/8`).
 * Tests: test/builtins/http/egress-guard.test.ts, test/config/runner-config.test.ts.
 */
export interface EgressAllowList {
  /** Exact host names, normalised (normaliseHost). */
  readonly hosts: ReadonlySet<string>;
  /** `.suffix` of each `*.suffix` entry. */
  readonly suffixes: readonly string[];
  /** Allowed addresses and networks. */
  readonly networks: BlockList;
}

/** An LDBOX_EGRESS_ALLOW entry that is not a host name, `*.suffix`, IP address or CIDR. */
export class EgressConfigError extends Error {
  override readonly name = 'EgressConfigError';
}

const HOST_NAME = /^(?=.{1,253}$)(?:[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

/** Reads the entries; throws EgressConfigError naming the first one it cannot read. */
export function parseEgressAllowList(allow: readonly string[]): EgressAllowList {
  const hosts = new Set<string>();
  const suffixes: string[] = [];
  const networks = new BlockList();
  for (const raw of allow) {
    const entry = raw.trim();
    const bad = () => new EgressConfigError(`LDBOX_EGRESS_ALLOW: "${raw}" is not a host name, *.suffix, IP address or CIDR`);
    const slash = entry.indexOf('/');
    if (slash !== -1) {
      const ip = stripZone(entry.slice(0, slash));
      const bits = entry.slice(slash + 1);
      const family = isIP(ip);
      const max = family === 4 ? 32 : 128;
      if (family === 0 || !/^\d{1,3}$/.test(bits) || Number(bits) > max) throw bad();
      networks.addSubnet(ip, Number(bits), family === 4 ? 'ipv4' : 'ipv6');
      continue;
    }
    const ip = stripZone(entry);
    const family = isIP(ip);
    if (family !== 0) {
      networks.addAddress(ip, family === 4 ? 'ipv4' : 'ipv6');
      continue;
    }
    const wildcard = entry.startsWith('*.');
    const name = normaliseHost(wildcard ? entry.slice(2) : entry);
    if (name === undefined || !HOST_NAME.test(name)) throw bad();
    if (wildcard) suffixes.push(`.${name}`);
    else hosts.add(name);
  }
  return { hosts, suffixes, networks };
}

/** An address without brackets and without an IPv6 zone id (`fe80::1%eth0` → `fe80::1`). */
export function stripZone(address: string): string {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const zone = bare.indexOf('%');
  return zone === -1 ? bare : bare.slice(0, zone);
}

/** Lower case, ASCII (punycode), without brackets and a trailing dot; undefined when unreadable. */
export function normaliseHost(host: string): string | undefined {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h.endsWith('.')) h = h.slice(0, -1);
  if (isIP(stripZone(h)) !== 0) return stripZone(h);
  const ascii = domainToASCII(h);
  return ascii === '' ? undefined : ascii;
}
