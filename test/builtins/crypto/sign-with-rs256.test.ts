/**
 * ld.signWithRS256 (spec "ld.signWithRS256(data, privateKey, options?)"): RSASSA-PKCS1-v1_5 with
 * SHA-256, checked against independent implementations: the published JWS examples of RFC 7515 A.2
 * and RFC 7520 4.1 (test/fixtures/rs256/, see SOURCE.md) and the openssl command line. Both PEM forms,
 * both encodings, the options, and bad keys: each error is readable and never holds any line of the key.
 */
import { spawnSync } from 'node:child_process';
import { createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { signWithRS256 } from '../../../runner/builtins/crypto/rs256.js';
import { GuestFacingError } from '../../../runner/builtins/guest-boundary.js';
import type { BuiltinContext } from '../../../runner/builtins/guest-boundary.js';

const FIXTURES = new URL('../../../../test/fixtures/rs256/', import.meta.url);
const fixture = (path: string) => readFileSync(new URL(path, FIXTURES), 'utf8');
const VECTORS = ['rfc7515-a2', 'rfc7520-4.1'] as const;
const CTX = {} as BuiltinContext;

type Outcome = { value: unknown } | { name: string; message: string };
function call(...args: unknown[]): Outcome {
  try {
    return { value: signWithRS256(args, CTX) };
  } catch (err) {
    if (err instanceof GuestFacingError) return { name: err.guestName, message: err.message };
    throw err;
  }
}
const signature = (...args: unknown[]) => (call(...args) as { value: { signature: string } }).value?.signature;

t.test('the RFC vectors, both PEM forms, both encodings', async (t) => {
  for (const v of VECTORS) {
    const input = fixture(`${v}/signing-input.txt`);
    const base64 = fixture(`${v}/signature.base64`).trim();
    const hex = fixture(`${v}/signature.hex`).trim();
    const b64url = fixture(`${v}/signature.b64url`).trim();
    t.equal(Buffer.from(base64, 'base64').toString('base64url'), b64url, `${v}: the fixture's encodings agree`);
    for (const form of ['pkcs1', 'pkcs8'] as const) {
      const pem = fixture(`${v}/key.private.${form}.pem`);
      t.match(pem, form === 'pkcs1' ? /^-----BEGIN RSA PRIVATE KEY-----\n/ : /^-----BEGIN PRIVATE KEY-----\n/, `${v} ${form}: the PEM form`);
      t.same(call(input, pem), { value: { signature: base64 } }, `${v} ${form}: default encoding is base64`);
      t.same(call(input, pem, {}), { value: { signature: base64 } }, `${v} ${form}: {} means base64`);
      t.same(call(input, pem, { encoding: 'base64' }), { value: { signature: base64 } }, `${v} ${form}: base64`);
      t.same(call(input, pem, { encoding: 'hex' }), { value: { signature: hex } }, `${v} ${form}: hex`);
      t.same(call(input, pem, null), { value: { signature: base64 } }, `${v} ${form}: null options (an undefined argument crosses as null)`);
      t.same(call(input, pem, { encoding: null }), { value: { signature: base64 } }, `${v} ${form}: a null encoding`);
    }
  }
});

t.test('the RFC 7515 A.2 JWS is rebuilt from its parts', async (t) => {
  const header = fixture('rfc7515-a2/protected-header.json');
  const payload = fixture('rfc7515-a2/payload.json');
  const input = `${Buffer.from(header).toString('base64url')}.${Buffer.from(payload).toString('base64url')}`;
  t.equal(input, fixture('rfc7515-a2/signing-input.txt'), 'the signing input');
  const sig = signature(input, fixture('rfc7515-a2/key.private.pkcs8.pem'));
  t.equal(Buffer.from(sig, 'base64').toString('base64url'), fixture('rfc7515-a2/signature.b64url').trim(), 'the JWS signature');
});

t.test('signatures verify with the public key; data is signed as UTF-8', async (t) => {
  const pub = createPublicKey(fixture('rfc7520-4.1/key.public.spki.pem'));
  const pem = fixture('rfc7520-4.1/key.private.pkcs1.pem');
  for (const data of ['', 'plain ASCII', 'Grüße, 世界 — “quotes” 🎉', '\u0000binary\u00ff']) {
    const sig = Buffer.from(signature(data, pem), 'base64');
    t.ok(verify('sha256', Buffer.from(data, 'utf8'), pub, sig), `verifies: ${JSON.stringify(data)}`);
    t.equal(sig.length, 256, 'a 2048-bit signature');
  }
});

t.test('PEM text as it arrives from configuration', async (t) => {
  const pem = fixture('rfc7515-a2/key.private.pkcs8.pem');
  const input = fixture('rfc7515-a2/signing-input.txt');
  const expected = { value: { signature: fixture('rfc7515-a2/signature.base64').trim() } };
  t.same(call(input, pem.replace(/\n/g, '\r\n')), expected, 'CRLF line ends');
  t.same(call(input, pem.replace(/\n/g, '\\n')), expected, 'literal \\n sequences (an environment variable)');
  t.same(call(input, pem.replace(/\n/g, ' ')), expected, 'pasted on one line');
  t.same(call(input, `  \n${pem}\n\n`), expected, 'surrounding whitespace');
  const cert = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
  t.same(call(input, `${cert}${pem}`), expected, 'a bundle with a certificate before the key');
});

const OPENSSL = spawnSync('openssl', ['version'], { encoding: 'utf8' }).status === 0;

t.test('cross-checked with the openssl command line', { skip: OPENSSL ? false : 'openssl is not installed' }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ldbox-rs256-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const opensslSign = (keyFile: string, data: string) => {
    const r = spawnSync('openssl', ['dgst', '-sha256', '-sign', keyFile], { input: Buffer.from(data, 'utf8') });
    if (r.status !== 0) throw new Error(`openssl failed: ${r.stderr.toString()}`);
    return r.stdout;
  };
  // Keys generated by openssl itself, in both PEM forms, and the fixture keys.
  const keys: Record<string, string> = {};
  const gen = spawnSync('openssl', ['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', join(dir, 'gen8.pem')]);
  t.equal(gen.status, 0, 'openssl genpkey');
  const trad = spawnSync('openssl', ['rsa', '-in', join(dir, 'gen8.pem'), '-traditional', '-out', join(dir, 'gen1.pem')]);
  t.equal(trad.status, 0, 'openssl rsa -traditional');
  keys['openssl PKCS#8'] = join(dir, 'gen8.pem');
  keys['openssl PKCS#1'] = join(dir, 'gen1.pem');
  for (const v of VECTORS) {
    for (const form of ['pkcs1', 'pkcs8']) {
      const file = join(dir, `${v}.${form}.pem`);
      writeFileSync(file, fixture(`${v}/key.private.${form}.pem`));
      keys[`${v} ${form}`] = file;
    }
  }
  t.match(readFileSync(keys['openssl PKCS#1']!, 'utf8'), /^-----BEGIN RSA PRIVATE KEY-----/, 'openssl wrote PKCS#1');
  t.match(readFileSync(keys['openssl PKCS#8']!, 'utf8'), /^-----BEGIN PRIVATE KEY-----/, 'openssl wrote PKCS#8');
  const inputs = ['', 'hello', fixture('rfc7520-4.1/signing-input.txt'), 'Grüße 世界 🎉\n'];
  for (const [name, file] of Object.entries(keys)) {
    const pem = readFileSync(file, 'utf8');
    for (const data of inputs) {
      const theirs = opensslSign(file, data);
      t.equal(signature(data, pem), theirs.toString('base64'), `${name}, ${JSON.stringify(data.slice(0, 20))}: base64 equals openssl`);
      t.equal(signature(data, pem, { encoding: 'hex' }), theirs.toString('hex'), `${name}, ${JSON.stringify(data.slice(0, 20))}: hex equals openssl`);
    }
  }
});

t.test('arguments and options', async (t) => {
  const pem = fixture('rfc7515-a2/key.private.pkcs8.pem');
  const usage = 'signWithRS256(data, privateKey, options?)';
  t.same(call(), { name: 'TypeError', message: `${usage}: data must be a string, got nothing` });
  t.same(call(42, pem), { name: 'TypeError', message: `${usage}: data must be a string, got a number` });
  t.same(call(null, pem), { name: 'TypeError', message: `${usage}: data must be a string, got null` });
  t.same(call(new Uint8Array([1, 2]), pem), { name: 'TypeError', message: `${usage}: data must be a string, got binary data` });
  t.same(call({ a: 1 }, pem), { name: 'TypeError', message: `${usage}: data must be a string, got an object` });
  t.same(call('x'), { name: 'TypeError', message: `${usage}: privateKey must be a PEM string, got nothing` });
  t.same(call('x', { pem }), { name: 'TypeError', message: `${usage}: privateKey must be a PEM string, got an object` });
  t.same(call('x', pem, 'hex'), { name: 'TypeError', message: "signWithRS256: options must be an object like {encoding: 'hex'}, got a string" });
  t.same(call('x', pem, ['hex']), { name: 'TypeError', message: "signWithRS256: options must be an object like {encoding: 'hex'}, got an array" });
  const badEncoding = (got: string) => ({ name: 'TypeError', message: `signWithRS256: options.encoding must be 'base64' or 'hex', got ${got}` });
  t.same(call('x', pem, { encoding: 'base64url' }), badEncoding('"base64url"'));
  t.same(call('x', pem, { encoding: 'HEX' }), badEncoding('"HEX"'), 'case matters');
  t.same(call('x', pem, { encoding: 'utf8' }), badEncoding('"utf8"'));
  t.same(call('x', pem, { encoding: 16 }), badEncoding('a number'));
  t.same(call('x', pem, { encoding: 'x'.repeat(100) }), badEncoding(`"${'x'.repeat(20)}…"`), 'a long value is cut');
  t.match(call('x', pem, { other: true }), { value: { signature: /^[A-Za-z0-9+/]+=*$/ } }, 'other option keys are ignored');
});

t.test('bad keys: a readable error that never holds any line of the key', async (t) => {
  const pkcs8 = fixture('rfc7515-a2/key.private.pkcs8.pem');
  const pkcs1 = fixture('rfc7515-a2/key.private.pkcs1.pem');
  const lines = pkcs8.split('\n');
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
  const withLine = (pem: string, n: number, f: (line: string) => string) =>
    pem
      .split('\n')
      .map((l, i) => (i === n ? f(l) : l))
      .join('\n');
  const cases: { name: string; key: string; message: string }[] = [
    {
      name: 'garbage',
      key: 'this is certainly not a private key',
      message: 'privateKey is not a PEM private key (expected a PRIVATE KEY or RSA PRIVATE KEY block)',
    },
    { name: 'an empty string', key: '', message: 'privateKey is an empty string' },
    {
      name: 'base64 without PEM lines',
      key: lines.slice(1, -2).join(''),
      message: 'privateKey is not a PEM private key (expected a PRIVATE KEY or RSA PRIVATE KEY block)',
    },
    { name: 'a PEM cut short', key: lines.slice(0, 12).join('\n'), message: 'the PEM is incomplete: its PRIVATE KEY block has no END line (truncated?)' },
    {
      name: 'a PEM body cut short',
      key: [...lines.slice(0, 12), '-----END PRIVATE KEY-----'].join('\n'),
      message: 'the PKCS#8 private key could not be read: its data is damaged or incomplete',
    },
    {
      name: 'a PKCS#1 body cut short',
      key: [...pkcs1.split('\n').slice(0, 12), '-----END RSA PRIVATE KEY-----'].join('\n'),
      message: 'the PKCS#1 private key could not be read: its data is damaged or incomplete',
    },
    {
      name: 'a character that is not base64',
      key: withLine(pkcs8, 3, (l) => `${l.slice(0, 20)}*${l.slice(21)}`),
      message: 'the PKCS#8 private key is damaged: its PEM body is not valid base64 (truncated or altered?)',
    },
    {
      // (A damaged CRT part is repaired by OpenSSL's own check, which falls back to d: the signature stays valid.)
      name: 'an altered byte in the modulus',
      key: withLine(pkcs8, 3, (l) => `${l.slice(0, 30)}${l[30] === 'A' ? 'B' : 'A'}${l.slice(31)}`),
      message: 'the private key is damaged: its parts do not belong together',
    },
    {
      name: 'a public key',
      key: fixture('rfc7515-a2/key.public.spki.pem'),
      message: 'not an RSA private key: the PEM holds a public key (signing needs the private key)',
    },
    {
      name: 'an EC key (SEC1)',
      key: ec.export({ format: 'pem', type: 'sec1' }).toString(),
      message: 'not an RSA private key: the PEM holds an EC private key',
    },
    { name: 'an EC key (PKCS#8)', key: ec.export({ format: 'pem', type: 'pkcs8' }).toString(), message: 'not an RSA private key: the PEM holds an EC key' },
    {
      name: 'an Ed25519 key',
      key: generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
      message: 'not an RSA private key: the PEM holds an Ed25519 key',
    },
    {
      name: 'an RSA-PSS key',
      key: generateKeyPairSync('rsa-pss', { modulusLength: 2048 }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
      message: 'not an RSA private key: the PEM holds an RSA-PSS key (RS256 needs a plain RSA key)',
    },
    {
      name: 'an encrypted PKCS#8 key',
      key: rsa.export({ format: 'pem', type: 'pkcs8', cipher: 'aes-256-cbc', passphrase: 'secret' }).toString(),
      message: 'the private key is encrypted (protected by a passphrase); decrypt it first, e.g. with openssl pkey',
    },
    {
      name: 'an encrypted PKCS#1 key',
      key: rsa.export({ format: 'pem', type: 'pkcs1', cipher: 'aes-256-cbc', passphrase: 'secret' }).toString(),
      message: 'the private key is encrypted (protected by a passphrase); decrypt it first, e.g. with openssl pkey',
    },
    {
      name: 'an OpenSSH key',
      key: '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----\n',
      message: 'the key is in OpenSSH format; convert it to PEM first (ssh-keygen -p -m PEM, or openssl pkey)',
    },
    {
      name: 'a certificate',
      key: '-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----',
      message: 'not an RSA private key: the PEM holds a certificate (signing needs the private key)',
    },
    {
      name: 'an oversized value',
      key: `${pkcs8}${'A'.repeat(70_000)}`,
      message: `privateKey is ${pkcs8.length + 70_000} characters long, too long for a PEM private key`,
    },
  ];
  for (const c of cases) {
    const got = call('data', c.key);
    t.same(got, { name: 'Error', message: `signWithRS256: ${c.message}` }, `${c.name}: the message`);
    const message = 'message' in got ? got.message : '';
    const leaked = c.key
      .split(/\r?\n|\\n/)
      .map((l) => l.trim())
      .filter((l) => l.length >= 8 && message.includes(l));
    t.same(leaked, [], `${c.name}: no line of the key in the message`);
  }
});
