/**
 * The egress guard's decisions (runner/builtins/http/egress-guard.ts; DESIGN "outbound HTTP from
 * ld.request"): every blocked range at its edges, IPv6 forms that carry an IPv4 address, odd URL
 * notations, and the operator's allow list by host, wildcard and CIDR.
 */
import t from 'tap';
import { classifyAddress, EgressConfigError, EgressGuard, isPublicAddress } from '../../../runner/builtins/http/egress-guard.js';

t.test('IPv4 ranges', async (t) => {
  const cases: [string, string][] = [
    ['0.0.0.0', 'an unspecified address'],
    ['0.255.255.255', 'an unspecified address'],
    ['10.0.0.0', 'a private address'],
    ['10.255.255.255', 'a private address'],
    ['100.64.0.0', 'a carrier-grade NAT address'],
    ['100.127.255.255', 'a carrier-grade NAT address'],
    ['127.0.0.1', 'a loopback address'],
    ['127.255.255.254', 'a loopback address'],
    ['169.254.0.1', 'a link-local address'],
    ['169.254.169.254', 'a cloud metadata address'],
    ['169.254.170.2', 'a cloud metadata address'],
    ['100.100.100.200', 'a cloud metadata address'],
    ['172.16.0.0', 'a private address'],
    ['172.31.255.255', 'a private address'],
    ['192.0.0.1', 'a reserved address'],
    ['192.0.2.1', 'a documentation address'],
    ['192.88.99.1', 'a reserved address'],
    ['192.168.0.1', 'a private address'],
    ['192.168.255.255', 'a private address'],
    ['198.18.0.1', 'a benchmarking address'],
    ['198.19.255.255', 'a benchmarking address'],
    ['198.51.100.7', 'a documentation address'],
    ['203.0.113.9', 'a documentation address'],
    ['224.0.0.1', 'a multicast address'],
    ['239.255.255.255', 'a multicast address'],
    ['240.0.0.1', 'a reserved address'],
    ['255.255.255.254', 'a reserved address'],
    ['255.255.255.255', 'a broadcast address'],
  ];
  for (const [ip, kind] of cases) t.equal(classifyAddress(ip), kind, ip);
  const publicOnes = [
    '1.1.1.1',
    '8.8.8.8',
    '9.255.255.255',
    '11.0.0.0',
    '100.63.255.255',
    '100.128.0.0',
    '126.255.255.255',
    '128.0.0.0',
    '169.253.255.255',
    '169.255.0.0',
    '172.15.255.255',
    '172.32.0.0',
    '192.0.1.255',
    '192.0.3.0',
    '192.167.255.255',
    '192.169.0.0',
    '198.17.255.255',
    '198.20.0.0',
    '223.255.255.255',
  ];
  for (const ip of publicOnes) t.equal(classifyAddress(ip), 'public', `${ip} is public`);
});

t.test('IPv6 ranges', async (t) => {
  const cases: [string, string][] = [
    ['::', 'an unspecified address'],
    ['::1', 'a loopback address'],
    ['0:0:0:0:0:0:0:1', 'a loopback address'],
    ['::2', 'a reserved address'],
    ['::127.0.0.1', 'a reserved address'], // IPv4-compatible (deprecated)
    ['100::1', 'a reserved address'], // discard-only
    ['fc00::1', 'a private address'],
    ['fdff:ffff::1', 'a private address'],
    ['fd00:ec2::254', 'a cloud metadata address'],
    ['fd00:ec2:0:0:0:0:0:254', 'a cloud metadata address'],
    ['fe80::1', 'a link-local address'],
    ['fe80::1%eth0', 'a link-local address'],
    ['febf:ffff::1', 'a link-local address'],
    ['fec0::1', 'a private address'],
    ['ff02::1', 'a multicast address'],
    ['ff0e::1', 'a multicast address'],
    ['2001:db8::1', 'a documentation address'],
    ['2001:db8:ffff::1', 'a documentation address'],
    ['3fff::1', 'a documentation address'],
    ['3fff:fff:ffff::1', 'a documentation address'],
    ['2001::1', 'a reserved address'], // Teredo
    ['2001:1ff::1', 'a reserved address'],
    ['64:ff9b:1::a00:1', 'a private address'], // local-use NAT64
    ['5f00::1', 'a reserved address'],
    ['4000::1', 'a reserved address'],
    ['[::1]', 'a loopback address'],
  ];
  for (const [ip, kind] of cases) t.equal(classifyAddress(ip), kind, ip);
  for (const ip of ['2606:4700:4700::1111', '2001:4860:4860::8888', '2a00:1450::1', '2001:200::1', '3ffe::1', '3fff:1000::1']) {
    t.equal(classifyAddress(ip), 'public', `${ip} is public`);
  }
});

t.test('IPv6 forms that carry an IPv4 address are judged by that address', async (t) => {
  const cases: [string, string][] = [
    ['::ffff:127.0.0.1', 'a loopback address'],
    ['::ffff:7f00:1', 'a loopback address'],
    ['0:0:0:0:0:ffff:7f00:1', 'a loopback address'],
    ['::ffff:169.254.169.254', 'a cloud metadata address'],
    ['::ffff:a9fe:a9fe', 'a cloud metadata address'],
    ['::ffff:10.1.2.3', 'a private address'],
    ['::ffff:0.0.0.0', 'an unspecified address'],
    ['::ffff:8.8.8.8', 'public'],
    ['64:ff9b::127.0.0.1', 'a loopback address'], // NAT64
    ['64:ff9b::a9fe:a9fe', 'a cloud metadata address'],
    ['64:ff9b::c0a8:101', 'a private address'],
    ['64:ff9b::808:808', 'public'],
    ['2002:7f00:1::', 'a loopback address'], // 6to4
    ['2002:a9fe:a9fe::1', 'a cloud metadata address'],
    ['2002:c0a8:101::1', 'a private address'],
    ['2002:808:808::1', 'public'],
  ];
  for (const [ip, kind] of cases) t.equal(classifyAddress(ip), kind, ip);
});

t.test('odd URL notations are normalised by the URL parser and refused', async (t) => {
  const guard = new EgressGuard();
  const urls: [string, string][] = [
    ['http://2130706433/', '127.0.0.1'],
    ['http://0x7f.1/', '127.0.0.1'],
    ['http://0177.0.0.1/', '127.0.0.1'],
    ['http://127.1/', '127.0.0.1'],
    ['http://0x7f000001/', '127.0.0.1'],
    ['http://%31%32%37.0.0.1/', '127.0.0.1'],
    ['http://0/', '0.0.0.0'],
    ['http://0xa9fea9fe/', '169.254.169.254'],
    ['http://[::ffff:7f00:1]/', '::ffff:7f00:1'],
    ['http://[::ffff:127.0.0.1]/', '::ffff:7f00:1'],
    ['http://[0:0:0:0:0:ffff:7f00:1]/', '::ffff:7f00:1'],
    ['http://[::]/', '::'],
    ['http://[64:ff9b::127.0.0.1]/', '64:ff9b::7f00:1'],
  ];
  for (const [url, address] of urls) {
    const h = new URL(url).hostname;
    const host = h.startsWith('[') ? h.slice(1, -1) : h;
    t.equal(host, address, `${url} is ${address}`);
    t.not(guard.check(host, host), undefined, `${url} is refused`);
  }
  t.equal(isPublicAddress('0177.0.0.1'), false, 'a string that is not an IP address is never public');
  t.equal(classifyAddress('localhost'), 'not an IP address');
  t.equal(classifyAddress('1.2.3'), 'not an IP address');
});

t.test('refusals say what the address is', async (t) => {
  const guard = new EgressGuard();
  t.equal(guard.check('127.0.0.1', '127.0.0.1')?.message, '127.0.0.1 is a loopback address, which the egress guard blocks');
  t.equal(
    guard.check('metadata.google.internal', '169.254.169.254')?.message,
    'metadata.google.internal resolves to 169.254.169.254, a cloud metadata address, which the egress guard blocks',
  );
  t.equal(guard.check('[::1]', '::1')?.message, '::1 is a loopback address, which the egress guard blocks');
  t.equal(guard.check('fe80::1%eth0', 'fe80::1%eth0')?.kind, 'a link-local address');
  t.equal(guard.check('example.com', '93.184.215.14'), undefined, 'a public address passes');
});

t.test('the allow list', async (t) => {
  t.test('by exact host name', async (t) => {
    const guard = new EgressGuard(['internal.example', 'Localhost.']);
    t.equal(guard.check('internal.example', '10.0.0.5'), undefined, 'the named host may reach a private address');
    t.equal(guard.check('INTERNAL.example.', '10.0.0.5'), undefined, 'case and a trailing dot do not matter');
    t.equal(guard.check('localhost', '127.0.0.1'), undefined, 'an entry is normalised too');
    t.not(guard.check('other.example', '10.0.0.5'), undefined, 'another name is not');
    t.not(guard.check('a.internal.example', '10.0.0.5'), undefined, 'a subdomain is not');
    t.not(guard.check('10.0.0.5', '10.0.0.5'), undefined, 'nor the address itself');
  });
  t.test('by *.suffix', async (t) => {
    const guard = new EgressGuard(['*.corp.example']);
    t.equal(guard.check('api.corp.example', '10.1.1.1'), undefined);
    t.equal(guard.check('a.b.corp.example', '192.168.1.1'), undefined);
    t.not(guard.check('corp.example', '10.1.1.1'), undefined, 'the suffix itself is not covered');
    t.not(guard.check('evilcorp.example', '10.1.1.1'), undefined, 'a name that only ends with the same letters is not');
  });
  t.test('by IP address and CIDR', async (t) => {
    const guard = new EgressGuard(['10.20.0.0/16', '127.0.0.1', 'fd12:3456::/32', '::1']);
    t.equal(guard.check('db.internal', '10.20.3.4'), undefined, 'any name resolving into an allowed network');
    t.equal(guard.check('10.20.255.255', '10.20.255.255'), undefined, 'an address literal in the network');
    t.not(guard.check('x', '10.21.0.1'), undefined, 'outside the network');
    t.equal(guard.check('127.0.0.1', '127.0.0.1'), undefined, 'a single address');
    t.not(guard.check('127.0.0.2', '127.0.0.2'), undefined, 'its neighbour is not allowed');
    t.equal(guard.check('::ffff:127.0.0.1', '::ffff:127.0.0.1'), undefined, 'an IPv4-mapped form of an allowed address');
    t.equal(guard.check('x', 'fd12:3456:1::1'), undefined, 'an IPv6 network');
    t.not(guard.check('x', 'fd12:3457::1'), undefined, 'outside the IPv6 network');
    t.equal(guard.check('::1', '::1'), undefined, 'a single IPv6 address');
    t.not(guard.check('x', '169.254.169.254'), undefined, 'metadata stays blocked');
  });
  t.test('unreadable entries are refused with the entry named', async (t) => {
    for (const bad of ['10.0.0.0/33', '::/129', 'not a host', '*', '*.', 'http://x.example', '10.0.0.0/x', '300.1.1.1/8', 'a..b']) {
      t.throws(() => new EgressGuard([bad]), new EgressConfigError(`LDBOX_EGRESS_ALLOW: "${bad}" is not a host name, *.suffix, IP address or CIDR`), bad);
    }
    t.doesNotThrow(() => new EgressGuard(['0.0.0.0/0', '::/0', 'a-b.c_d.example', 'xn--bcher-kva.example', 'bücher.example']));
  });
});
