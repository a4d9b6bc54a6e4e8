import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';

/** The length-delimited fields numbered `no` in protobuf bytes: for tests that read answers field by field. */
export function fieldsOf(bytes: Uint8Array, no: number): Uint8Array[] {
  const r = new BinaryReader(bytes);
  const out: Uint8Array[] = [];
  while (r.pos < r.len) {
    const [n, wireType] = r.tag();
    if (wireType === WireType.LengthDelimited) {
      const b = r.bytes();
      if (n === no) out.push(b);
    } else r.skip(wireType);
  }
  return out;
}
