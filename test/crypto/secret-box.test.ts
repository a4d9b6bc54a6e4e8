/** The secret box (src/crypto/secret-box.ts): round trip, wrong key, truncated, tampered tag, wrong associated data. */
import { inspect } from 'node:util';
import t from 'tap';
import { dataKey, dataKeyId, isSealed, KeyRing, SecretBoxError, sealedKeyId } from '../../src/crypto/secret-box.js';

const A = dataKey(Buffer.alloc(32, 1));
const B = dataKey(Buffer.alloc(32, 2));
const CTX = 'ldbox-workflows/wf_a/nodes/n1/auth';

/** The SecretBoxError `open` throws, as { code, message, keyId }. */
function refusal(ring: KeyRing, sealed: string, ctx = CTX): { code: string; message: string; keyId: string | undefined } {
  try {
    ring.open(sealed, ctx);
  } catch (err) {
    if (!(err instanceof SecretBoxError)) throw err;
    return { code: err.code, message: err.message, keyId: err.keyId };
  }
  throw new Error('opened');
}

/** `sealed` with one base64url character of its body changed at `index` from the end. */
function flip(sealed: string, fromEnd: number): string {
  const i = sealed.length - fromEnd;
  const c = sealed[i] === 'A' ? 'B' : 'A';
  return sealed.slice(0, i) + c + sealed.slice(i + 1);
}

t.test('round trip, a fresh nonce each time, format and key id', async (t) => {
  const ring = new KeyRing(A);
  const s1 = ring.seal('{"token":"s3cr3t"}', CTX);
  const s2 = ring.seal('{"token":"s3cr3t"}', CTX);
  t.equal(ring.open(s1, CTX).toString('utf8'), '{"token":"s3cr3t"}');
  t.not(s1, s2, 'random nonce: two seals of one value differ');
  t.match(s1, new RegExp(`^ldbox:v1:${A.id}:[A-Za-z0-9_-]+$`));
  t.equal(A.id.length, 8);
  t.equal(A.id, dataKeyId(Buffer.alloc(32, 1)));
  t.not(A.id, B.id);
  t.equal(sealedKeyId(s1), A.id);
  t.ok(isSealed(s1));
  t.notOk(isSealed('{"token":"x"}'));
  t.notOk(s1.includes('s3cr3t'));
  t.notOk(s1.includes(Buffer.from('s3cr3t').toString('base64')));
  t.equal(ring.open(ring.seal('', CTX), CTX).length, 0, 'empty plaintext');
});

t.test('old keys open, the current key seals', async (t) => {
  const sealedA = new KeyRing(A).seal('x', CTX);
  const ring = new KeyRing(B, [A]);
  t.equal(ring.open(sealedA, CTX).toString(), 'x');
  t.equal(sealedKeyId(ring.seal('x', CTX)), B.id);
  t.same(ring.keyIds, [B.id, A.id]);
});

t.test('wrong key: refused naming the key id', async (t) => {
  const sealed = new KeyRing(A).seal('x', CTX);
  t.same(refusal(new KeyRing(B), sealed), {
    code: 'unknown_key',
    message: `the stored secret is sealed with data key ${A.id}, which is not configured (LDBOX_DATA_KEY or LDBOX_DATA_KEY_OLD)`,
    keyId: A.id,
  });
  // A value claiming B's id but sealed with A: authentication fails.
  const forged = sealed.replace(A.id, B.id);
  t.equal(refusal(new KeyRing(B), forged).code, 'not_authentic');
});

t.test('truncated', async (t) => {
  const ring = new KeyRing(A);
  const sealed = ring.seal('a value long enough', CTX);
  t.equal(refusal(ring, sealed.slice(0, -4)).code, 'not_authentic', 'tag cut short');
  const head = `ldbox:v1:${A.id}:`;
  t.same(refusal(ring, head + 'AAAA'), { code: 'malformed', message: `the stored secret sealed with data key ${A.id} is truncated`, keyId: A.id });
  t.equal(refusal(ring, head).code, 'malformed');
  t.equal(refusal(ring, 'ldbox:v1:').code, 'malformed');
  t.equal(refusal(ring, 'ldbox:v9:abc:def').message, 'the stored secret has format version "v9", this ldbox reads v1');
  t.equal(refusal(ring, 'plain').message, 'the stored secret is not a sealed value');
});

t.test('tampered tag or ciphertext', async (t) => {
  const ring = new KeyRing(A);
  const sealed = ring.seal('{"token":"s3cr3t"}', CTX);
  const r = refusal(ring, flip(sealed, 2));
  t.same(r, {
    code: 'not_authentic',
    message: `the stored secret sealed with data key ${A.id} failed authentication: it was altered, truncated or belongs to another record`,
    keyId: A.id,
  });
  t.equal(refusal(ring, flip(sealed, 30)).code, 'not_authentic', 'ciphertext byte');
});

t.test('wrong associated data: another node or workflow', async (t) => {
  const ring = new KeyRing(A);
  const sealed = ring.seal('x', CTX);
  t.equal(refusal(ring, sealed, 'ldbox-workflows/wf_a/nodes/n2/auth').code, 'not_authentic');
  t.equal(refusal(ring, sealed, 'ldbox-workflows/wf_b/nodes/n1/auth').code, 'not_authentic');
});

t.test('a key ring logged or serialised shows key ids, never key bytes', async (t) => {
  const ring = new KeyRing(A, [B]);
  const json = JSON.stringify({ ring, current: ring.current });
  t.equal(json, `{"ring":{"current":{"id":"${A.id}"}},"current":{"id":"${A.id}"}}`);
  t.equal(inspect(ring, { depth: 5 }), `KeyRing { current: { id: '${A.id}' } }`);
});

t.test('a data key is 32 bytes', async (t) => {
  t.throws(() => dataKey(Buffer.alloc(16)), new RangeError('a data key is 32 bytes, got 16'));
});
