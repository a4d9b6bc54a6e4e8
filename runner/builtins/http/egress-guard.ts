import { BlockList, isIP } from 'node:net';
import { EgressConfigError, normaliseHost, parseEgressAllowList, stripZone } from '../../config/egress-allow-list.js';

export { EgressConfigError };

/**
 * The egress guard of ld.request (DESIGN "outbound HTTP from ld.request"): decides whether user code
 * may reach an address. Loopback, private, link-local, carrier-grade NAT, multicast, reserved,
 * documentation and cloud-metadata addresses are refused, in IPv4 and IPv6, including IPv6 forms that
 * carry an IPv4 address (IPv4-mapped, NAT64, 6to4). Operators open hosts and networks with
 * LDBOX_EGRESS_ALLOW. The guard is applied to the address actually connected to (egress-agent.ts),
 * so a DNS name that resolves to a private address is caught too. Tests: test/builtins/http/egress-guard.test.ts.
 */

/** Why an address is refused, phrased to follow "is" in a message ("127.0.0.1 is a loopback address"). */
export type AddressKind =
  | 'public'
  | 'an unspecified address'
  | 'a loopback address'
  | 'a private address'
  | 'a carrier-grade NAT address'
  | 'a link-local address'
  | 'a cloud metadata address'
  | 'a multicast address'
  | 'a broadcast address'
  | 'a reserved address'
  | 'a documentation address'
  | 'a benchmarking address'
  | 'not an IP address';

/** Metadata services of cloud providers: named so that an error says what was attempted. */
const METADATA = new Set(['169.254.169.254', '169.254.170.2', '169.254.169.253', '100.100.100.200', 'fd00:ec2::254']);

/** IPv4 ranges that are not globally reachable (IANA special-purpose registry), most specific first. */
const V4_RANGES: readonly (readonly [string, number, AddressKind])[] = [
  ['255.255.255.255', 32, 'a broadcast address'],
  ['0.0.0.0', 8, 'an unspecified address'],
  ['10.0.0.0', 8, 'a private address'],
  ['100.64.0.0', 10, 'a carrier-grade NAT address'],
  ['127.0.0.0', 8, 'a loopback address'],
  ['169.254.0.0', 16, 'a link-local address'],
  ['172.16.0.0', 12, 'a private address'],
  ['192.0.0.0', 24, 'a reserved address'],
  ['192.0.2.0', 24, 'a documentation address'],
  ['192.88.99.0', 24, 'a reserved address'],
  ['192.168.0.0', 16, 'a private address'],
  ['198.18.0.0', 15, 'a benchmarking address'],
  ['198.51.100.0', 24, 'a documentation address'],
  ['203.0.113.0', 24, 'a documentation address'],
  ['224.0.0.0', 4, 'a multicast address'],
  ['240.0.0.0', 4, 'a reserved address'],
];

const V4_LISTS = V4_RANGES.map(([net, prefix, kind]) => {
  const list = new BlockList();
  list.addSubnet(net, prefix, 'ipv4');
  return [list, kind] as const;
});

/** Classifies an IP address (v4 or v6, any notation `isIP` accepts, an IPv6 zone id allowed). */
export function classifyAddress(address: string): AddressKind {
  const ip = stripZone(address);
  const family = isIP(ip);
  if (family === 4) return classifyV4(ip);
  if (family === 6) return classifyV6(parseV6(ip));
  return 'not an IP address';
}

/** True when an address is globally reachable and not special: what ld.request may reach by default. */
export function isPublicAddress(address: string): boolean {
  return classifyAddress(address) === 'public';
}

function classifyV4(ip: string): AddressKind {
  if (METADATA.has(ip)) return 'a cloud metadata address';
  for (const [list, kind] of V4_LISTS) if (list.check(ip, 'ipv4')) return kind;
  return 'public';
}

function classifyV6(g: Uint16Array): AddressKind {
  const zeroUpTo = (n: number) => g.subarray(0, n).every((x) => x === 0);
  const v4At = (i: number) => `${g[i]! >> 8}.${g[i]! & 0xff}.${g[i + 1]! >> 8}.${g[i + 1]! & 0xff}`;
  if (zeroUpTo(8)) return 'an unspecified address';
  if (zeroUpTo(7) && g[7] === 1) return 'a loopback address';
  // ::ffff:a.b.c.d (IPv4-mapped) is the IPv4 address itself to the socket layer.
  if (zeroUpTo(5) && g[5] === 0xffff) return classifyV4(v4At(6));
  // NAT64 (64:ff9b::/96, RFC 6052): reaches the embedded IPv4 address, so that address decides.
  if (g[0] === 0x64 && g[1] === 0xff9b && g.subarray(2, 6).every((x) => x === 0)) return classifyV4(v4At(6));
  // Local-use NAT64 (64:ff9b:1::/48, RFC 8215): translated inside the operator's network.
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) return 'a private address';
  // ::a.b.c.d (IPv4-compatible, deprecated), the rest of ::/96, ::ffff:0:0:0/96 (SIIT) and all of ::/8.
  if (g[0]! >> 8 === 0) return 'a reserved address';
  if (ipv6Text(g) === 'fd00:ec2::254') return 'a cloud metadata address';
  if ((g[0]! & 0xfe00) === 0xfc00) return 'a private address'; // fc00::/7 unique local
  if ((g[0]! & 0xffc0) === 0xfe80) return 'a link-local address'; // fe80::/10
  if ((g[0]! & 0xffc0) === 0xfec0) return 'a private address'; // fec0::/10 site-local (deprecated)
  if (g[0]! >> 8 === 0xff) return 'a multicast address';
  if (g[0] === 0x2001 && g[1] === 0x0db8) return 'a documentation address'; // 2001:db8::/32
  if (g[0] === 0x3fff && g[1]! >> 12 === 0) return 'a documentation address'; // 3fff::/20
  // 6to4 (2002::/16): the embedded IPv4 address is where the packets go.
  if (g[0] === 0x2002) return classifyV4(v4At(1));
  // 2001::/23: IETF protocol assignments, among them Teredo (2001::/32), whose client address is hidden.
  if (g[0] === 0x2001 && g[1]! < 0x0200) return 'a reserved address';
  // Global unicast is 2000::/3; everything else (100::/64 discard, 5f00::/16 SRv6, unassigned) is not.
  if ((g[0]! & 0xe000) !== 0x2000) return 'a reserved address';
  return 'public';
}

/** The eight 16-bit groups of an IPv6 address already accepted by `isIP` (`::` and a dotted tail allowed). */
function parseV6(ip: string): Uint16Array {
  const groups = new Uint16Array(8);
  let text = ip.toLowerCase();
  const lastColon = text.lastIndexOf(':');
  const tail = text.slice(lastColon + 1);
  if (tail.includes('.')) {
    const [a, b, c, d] = tail.split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, rest] = text.includes('::') ? (text.split('::') as [string, string]) : [text, undefined];
  const left = head === '' ? [] : head.split(':');
  const right = rest === undefined || rest === '' ? [] : rest.split(':');
  for (const [i, h] of left.entries()) groups[i] = parseInt(h, 16);
  for (const [i, h] of right.entries()) groups[8 - right.length + i] = parseInt(h, 16);
  return groups;
}

function ipv6Text(g: Uint16Array): string {
  return new URL(`http://[${[...g].map((x) => x.toString(16)).join(':')}]/`).hostname.slice(1, -1);
}

/** A connection the guard refused; its message completes "ld.request refused <url>: ". */
export class EgressRefusedError extends Error {
  override readonly name = 'EgressRefusedError';
  constructor(
    readonly host: string,
    readonly address: string,
    readonly kind: AddressKind,
  ) {
    super(
      host === address || isIP(stripZone(host)) !== 0
        ? `${address} is ${kind}, which the egress guard blocks`
        : `${host} resolves to ${address}, ${kind}, which the egress guard blocks`,
    );
  }
}

/** True when `err` is a connection refused by the egress guard. */
export function isEgressRefused(err: unknown): err is EgressRefusedError {
  return err instanceof EgressRefusedError;
}

/**
 * The egress policy: the default rules plus the operator's allow list (LDBOX_EGRESS_ALLOW, read by
 * runner/config/egress-allow-list.ts). An allowed host may reach whatever it resolves to; an allowed
 * network may be reached under any name.
 */
export class EgressGuard {
  private readonly hosts: ReadonlySet<string>;
  private readonly suffixes: readonly string[];
  private readonly networks: BlockList;

  /** Throws EgressConfigError naming the first entry it cannot read (the syntax: egress-allow-list.ts). */
  constructor(allow: readonly string[] = []) {
    ({ hosts: this.hosts, suffixes: this.suffixes, networks: this.networks } = parseEgressAllowList(allow));
  }

  /** True when the allow list names this host (by name or `*.suffix`). */
  hostAllowed(host: string): boolean {
    const name = normaliseHost(host);
    if (name === undefined) return false;
    return this.hosts.has(name) || this.suffixes.some((s) => name.endsWith(s));
  }

  /** True when the allow list covers this address. */
  addressAllowed(address: string): boolean {
    const ip = stripZone(address);
    const family = isIP(ip);
    return family !== 0 && this.networks.check(ip, family === 4 ? 'ipv4' : 'ipv6');
  }

  /**
   * Checks one connection: `host` as named in the URL, `address` the IP about to be connected to.
   * Returns undefined when it may go ahead, otherwise the refusal.
   */
  check(host: string, address: string): EgressRefusedError | undefined {
    if (this.hostAllowed(host)) return undefined;
    const kind = classifyAddress(address);
    if (kind === 'public' || this.addressAllowed(address)) return undefined;
    return new EgressRefusedError(stripZone(host), stripZone(address), kind);
  }
}
