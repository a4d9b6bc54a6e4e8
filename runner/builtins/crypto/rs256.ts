import { type BuiltinModule, GuestFacingError, type SyncBuiltin } from '../guest-boundary.js';
import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';

/**
 * Spec "ld.signWithRS256(data, privateKey, options?)": RSASSA-PKCS1-v1_5 with SHA-256 over the UTF-8
 * bytes of `data`, with a PEM RSA private key (PKCS#1 `BEGIN RSA PRIVATE KEY` or PKCS#8
 * `BEGIN PRIVATE KEY`). Returns `{signature}` in base64 (default) or hex.
 *
 * The key is a secret: no message here ever holds any part of it. The PEM is taken apart here (so a
 * malformed one never reaches OpenSSL's PEM reader) and only the decoded DER goes to node:crypto,
 * whose errors are replaced by our own messages. Forgiven: surrounding text, CRLF line ends, a key
 * pasted on one line or with literal `\n` sequences (as from an environment variable).
 */

const FN = 'signWithRS256';
const ENCODINGS = ['base64', 'hex'] as const;
type Encoding = (typeof ENCODINGS)[number];

const BEGIN_LINE = /-----BEGIN ([A-Z0-9 ]{1,40})-----/g;
const KEY_KINDS: Readonly<Record<string, string>> = {
  'rsa-pss': 'an RSA-PSS key (RS256 needs a plain RSA key)',
  ec: 'an EC key',
  dsa: 'a DSA key',
  dh: 'a Diffie-Hellman key',
  ed25519: 'an Ed25519 key',
  ed448: 'an Ed448 key',
  x25519: 'an X25519 key',
  x448: 'an X448 key',
};
/** Far more than a 16384-bit RSA key in PEM (about 12 KB). */
const MAX_KEY_LENGTH = 64 * 1024;
const BASE64_BODY = /^[A-Za-z0-9+/]+={0,2}$/;

export const signWithRS256: SyncBuiltin = (args) => {
  const [data, privateKey, options] = args;
  if (typeof data !== 'string') {
    throw new GuestFacingError('TypeError', `${FN}(data, privateKey, options?): data must be a string, got ${describe(data, args.length < 1)}`);
  }
  if (typeof privateKey !== 'string') {
    throw new GuestFacingError('TypeError', `${FN}(data, privateKey, options?): privateKey must be a PEM string, got ${describe(privateKey, args.length < 2)}`);
  }
  const encoding = encodingOption(options);
  const key = readPrivateKey(privateKey);
  const bytes = Buffer.from(data, 'utf8');
  let signature: Buffer;
  try {
    signature = sign('sha256', bytes, key);
  } catch {
    throw new GuestFacingError('Error', `${FN}: the RSA key cannot make an RS256 signature (is it too small?)`);
  }
  // A key whose numbers were damaged still loads (OpenSSL does not check their consistency) but signs
  // garbage: check the signature against the key's own public half.
  if (!verify('sha256', bytes, createPublicKey(key), signature)) {
    throw new GuestFacingError('Error', `${FN}: the private key is damaged: its parts do not belong together`);
  }
  return { signature: signature.toString(encoding) };
};

function encodingOption(options: unknown): Encoding {
  if (options === undefined || options === null) return 'base64';
  if (typeof options !== 'object' || Array.isArray(options) || options instanceof Uint8Array) {
    throw new GuestFacingError('TypeError', `${FN}: options must be an object like {encoding: 'hex'}, got ${describe(options, false)}`);
  }
  const e = (options as Record<string, unknown>).encoding;
  if (e === undefined || e === null) return 'base64';
  if (typeof e === 'string' && (ENCODINGS as readonly string[]).includes(e)) return e as Encoding;
  const shown = typeof e === 'string' ? JSON.stringify(e.length > 20 ? `${e.slice(0, 20)}…` : e) : describe(e, false);
  throw new GuestFacingError('TypeError', `${FN}: options.encoding must be 'base64' or 'hex', got ${shown}`);
}

/** The RSA private key in `pem`, or a GuestFacingError that says what is wrong without quoting the key. */
function readPrivateKey(input: string): KeyObject {
  if (input.length > MAX_KEY_LENGTH) {
    throw new GuestFacingError('Error', `${FN}: privateKey is ${input.length} characters long, too long for a PEM private key`);
  }
  // Literal "\n" (two characters) for line breaks, as keys stored in environment variables often have.
  const pem = input.includes('\\n') ? input.replace(/\\r\\n|\\n/g, '\n') : input;
  const blocks = pemBlocks(pem);
  const block = blocks.find((b) => b.label === 'RSA PRIVATE KEY' || b.label === 'PRIVATE KEY' || b.label === 'ENCRYPTED PRIVATE KEY');
  if (!block)
    throw new GuestFacingError(
      'Error',
      `${FN}: ${whatInstead(
        pem,
        blocks.map((b) => b.label),
      )}`,
    );
  if (block.label === 'ENCRYPTED PRIVATE KEY' || /Proc-Type:|DEK-Info:/.test(block.body)) {
    throw new GuestFacingError('Error', `${FN}: the private key is encrypted (protected by a passphrase); decrypt it first, e.g. with openssl pkey`);
  }
  const form = block.label === 'RSA PRIVATE KEY' ? 'PKCS#1' : 'PKCS#8';
  const body = block.body.replace(/\s+/g, '');
  if (body.length === 0 || body.length % 4 !== 0 || !BASE64_BODY.test(body)) {
    throw new GuestFacingError('Error', `${FN}: the ${form} private key is damaged: its PEM body is not valid base64 (truncated or altered?)`);
  }
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: Buffer.from(body, 'base64'), format: 'der', type: form === 'PKCS#1' ? 'pkcs1' : 'pkcs8' });
  } catch {
    throw new GuestFacingError('Error', `${FN}: the ${form} private key could not be read: its data is damaged or incomplete`);
  }
  if (key.asymmetricKeyType !== 'rsa') {
    const kind = KEY_KINDS[String(key.asymmetricKeyType)] ?? `a key of type ${String(key.asymmetricKeyType)}`;
    throw new GuestFacingError('Error', `${FN}: not an RSA private key: the PEM holds ${kind}`);
  }
  return key;
}

/** The complete `-----BEGIN X----- ... -----END X-----` blocks of `pem`, in order (among its first 16 BEGIN lines). */
function pemBlocks(pem: string): { label: string; body: string }[] {
  const blocks: { label: string; body: string }[] = [];
  BEGIN_LINE.lastIndex = 0;
  let seen = 0;
  for (let m = BEGIN_LINE.exec(pem); m && ++seen <= 16; m = BEGIN_LINE.exec(pem)) {
    const label = m[1]!;
    const end = pem.indexOf(`-----END ${label}-----`, BEGIN_LINE.lastIndex);
    if (end < 0) continue;
    blocks.push({ label, body: pem.slice(BEGIN_LINE.lastIndex, end) });
    BEGIN_LINE.lastIndex = end;
  }
  return blocks;
}

/** Why there is no usable private key block, from the labels that are there. */
function whatInstead(pem: string, labels: readonly string[]): string {
  const has = (l: string) => labels.includes(l);
  if (has('EC PRIVATE KEY')) return 'not an RSA private key: the PEM holds an EC private key';
  if (has('DSA PRIVATE KEY')) return 'not an RSA private key: the PEM holds a DSA private key';
  if (has('OPENSSH PRIVATE KEY')) return 'the key is in OpenSSH format; convert it to PEM first (ssh-keygen -p -m PEM, or openssl pkey)';
  if (has('PUBLIC KEY') || has('RSA PUBLIC KEY')) return 'not an RSA private key: the PEM holds a public key (signing needs the private key)';
  if (has('CERTIFICATE')) return 'not an RSA private key: the PEM holds a certificate (signing needs the private key)';
  if (labels.length > 0) return `not an RSA private key: the PEM holds a ${labels[0]} block`;
  const begin = /-----BEGIN ([A-Z0-9 ]{1,40})-----/.exec(pem);
  if (begin) return `the PEM is incomplete: its ${begin[1]} block has no END line (truncated?)`;
  if (pem.trim() === '') return 'privateKey is an empty string';
  return 'privateKey is not a PEM private key (expected a PRIVATE KEY or RSA PRIVATE KEY block)';
}

function describe(v: unknown, missing: boolean): string {
  if (missing) return 'nothing';
  if (v === null) return 'null';
  if (v === undefined) return 'undefined';
  if (Array.isArray(v)) return 'an array';
  if (v instanceof Uint8Array) return 'binary data';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

export const RS256: BuiltinModule = {
  sync: { signWithRS256 },
  bindings: [{ guest: 'signWithRS256', host: 'signWithRS256', mode: 'sync' }],
};
