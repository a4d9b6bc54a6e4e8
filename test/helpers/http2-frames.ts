/** Raw HTTP/2 frames for tests that must send what no well-behaved client would (floods, half-open streams). */

/** An HTTP/2 frame: 9-byte header and payload. */
export function h2frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(streamId, 5);
  return Buffer.concat([head, payload]);
}

/** HPACK "literal header field without indexing, new name", no Huffman (RFC 7541 §6.2.2); short strings only. */
export function hpack(headers: [string, string][]): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of headers) {
    parts.push(Buffer.from([0x00, name.length]), Buffer.from(name, 'latin1'), Buffer.from([value.length]), Buffer.from(value, 'latin1'));
  }
  return Buffer.concat(parts);
}

/** The HEADERS block of a gRPC call to `path` with no token: what a flood of half-open streams sends. */
export function grpcCallHeaders(path: string): Buffer {
  return hpack([
    [':method', 'POST'],
    [':scheme', 'http'],
    [':path', path],
    [':authority', 'runner'],
    ['content-type', 'application/grpc'],
    ['te', 'trailers'],
  ]);
}
