/** Raw HTTP/2 frames for tests that must send what no well-behaved client would (floods, half-open streams). */
import type net from 'node:net';

export interface H2Frame {
  type: number;
  streamId: number;
  payload: Buffer;
}

/** Calls `onFrame` for every frame the server sends on `socket`, as whole frames arrive. */
export function onFrames(socket: net.Socket, onFrame: (frame: H2Frame) => void): void {
  let buf = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    buf = Buffer.concat([buf, chunk]);
    while (buf.length >= 9) {
      const len = buf.readUIntBE(0, 3);
      if (buf.length < 9 + len) break;
      onFrame({ type: buf[3]!, streamId: buf.readUInt32BE(5) & 0x7fffffff, payload: buf.subarray(9, 9 + len) });
      buf = buf.subarray(9 + len);
    }
  });
}

/** The frames the server sent, collected as they arrive. */
export function frameReader(socket: net.Socket): { frames: H2Frame[] } {
  const out = { frames: [] as H2Frame[] };
  onFrames(socket, (frame) => out.frames.push(frame));
  return out;
}

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
