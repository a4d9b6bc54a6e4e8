/**
 * The hand-written google.protobuf.Value writer (runner/server/value-binary.ts) must produce the very bytes
 * protobuf-es produces, and an independent decoder must read back the same JSON, `__proto__` keys included.
 */
import t, { type Test } from 'tap';
import { fromBinary, toBinary, toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import { encodeValueField } from '../../src/protobuf/value-binary.js';
import { jsonToValue } from '../../runner/wire/json-to-value.js';

/** The Value bytes inside the field written by encodeValueField (tag 0x12 = field 2, then a varint length). */
function valueBytes(field: Uint8Array): Uint8Array {
  let at = 1;
  let length = 0;
  for (let shift = 0; ; shift += 7) {
    const b = field[at++]!;
    length += (b & 0x7f) * 2 ** shift;
    if (b < 0x80) break;
  }
  t.equal(field[0], 0x12, 'tagged as field 2, length-delimited');
  t.equal(field.length - at, length, 'the length prefix covers exactly the value');
  return field.subarray(at);
}

function check(t: Test, label: string, value: unknown): void {
  const mine = valueBytes(encodeValueField(2, value));
  const reference = toBinary(ValueSchema, jsonToValue(value));
  t.same(Buffer.from(mine).toString('hex'), Buffer.from(reference).toString('hex'), `${label}: same bytes as protobuf-es`);
}

t.test('scalars, containers and text of every width match protobuf-es byte for byte', async (t) => {
  const cases: [string, unknown][] = [
    ['null', null],
    ['zero', 0],
    ['negative zero', -0],
    ['fraction', -1234.5678e-300],
    ['max safe', Number.MAX_SAFE_INTEGER],
    ['true', true],
    ['false', false],
    ['empty string', ''],
    ['ascii', 'hello'],
    ['two/three/four-byte utf-8', 'é€😀'],
    ['lone surrogate', '\ud800x'],
    ['string needing a 2-byte length', 'x'.repeat(200)],
    ['string needing a 3-byte length', 'y'.repeat(20_000)],
    ['empty list', []],
    ['empty object', {}],
    ['mixed list', [1, 'a', null, true, [], {}, [[[]]]]],
    ['object', { a: 1, b: { c: [1, 2, { d: 'e' }] }, '': 'empty key', ключ: 'значение' }],
    ['big object needing long lengths', Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`k${i}`, 'v'.repeat(i)]))],
  ];
  for (const [label, value] of cases) check(t, label, value);
});

t.test('__proto__, constructor and prototype keys are written as plain data', async (t) => {
  const parsed = JSON.parse('{"__proto__":{"x":1},"constructor":"c","prototype":[1]}');
  check(t, 'prototype-named keys', parsed);
  // protobuf-es's reader would drop a __proto__ map key (it assigns), so the bytes are checked directly:
  // each key is there as a map entry's key field (0x0a, length, UTF-8).
  const bytes = Buffer.from(encodeValueField(2, parsed));
  for (const key of ['__proto__', 'constructor', 'prototype']) {
    t.ok(bytes.includes(Buffer.concat([Buffer.from([0x0a, key.length]), Buffer.from(key)])), `${key} is a key`);
  }
});

t.test('random JSON values round-trip through an independent decoder', async (t) => {
  let seed = 7;
  const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
  const gen = (depth: number): unknown => {
    switch (rand(depth > 5 ? 4 : 6)) {
      case 0:
        return null;
      case 1:
        return rand(1000) / 7 - 50;
      case 2:
        return String.fromCharCode(...Array.from({ length: rand(20) }, () => 32 + rand(2000)));
      case 3:
        return rand(2) === 1;
      case 4:
        return Array.from({ length: rand(6) }, () => gen(depth + 1));
      default:
        return Object.fromEntries(Array.from({ length: rand(6) }, () => [`k${rand(50)}`, gen(depth + 1)]));
    }
  };
  for (let i = 0; i < 200; i++) {
    const value = JSON.parse(JSON.stringify(gen(0)));
    const bytes = valueBytes(encodeValueField(2, value));
    t.same(toJson(ValueSchema, fromBinary(ValueSchema, bytes)), value, `value ${i} reads back equal`);
    t.same(Buffer.from(bytes), Buffer.from(toBinary(ValueSchema, jsonToValue(value))), `value ${i} same bytes`);
  }
});

t.test('something that is not JSON is refused, not written half', async (t) => {
  t.throws(() => encodeValueField(2, { f: () => 1 }), { name: 'TypeError', message: 'not a JSON value: function' });
  t.throws(() => encodeValueField(2, [undefined]), { name: 'TypeError', message: 'not a JSON value: undefined' });
  t.throws(() => encodeValueField(2, 10n), { name: 'TypeError', message: 'not a JSON value: bigint' });
});
