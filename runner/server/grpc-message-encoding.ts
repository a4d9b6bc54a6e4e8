import type http2 from 'node:http2';

type Handler = (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void;

/**
 * Re-encodes the `grpc-message` header and trailer the way the gRPC spec asks: percent-encode only
 * bytes outside printable ASCII and `%` itself.
 *
 * Why: connect-node encodes with `encodeURIComponent`, which also escapes `:`, `,`, `/` and friends;
 * @grpc/grpc-js decodes with `decodeURI`, which leaves exactly those escaped, so the canonical client
 * showed "limits.timeoutMs must be at most 5000%2C got 5001". Both decoders read the minimal form.
 */
export function withSpecGrpcMessage(handler: Handler): Handler {
  return (req, res) => {
    const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => unknown;
    res.writeHead = ((status: number, ...rest: unknown[]) => {
      const headers = rest.find((r) => typeof r === 'object' && r !== null) as Record<string, unknown> | undefined;
      if (headers) fixHeaders(headers);
      return writeHead(status, ...rest);
    }) as typeof res.writeHead;
    const addTrailers = res.addTrailers.bind(res);
    res.addTrailers = (trailers) => {
      fixHeaders(trailers as Record<string, unknown>);
      addTrailers(trailers);
    };
    handler(req, res);
  };
}

function fixHeaders(headers: Record<string, unknown>): void {
  const v = headers['grpc-message'];
  if (typeof v === 'string') headers['grpc-message'] = encodeGrpcMessage(safeDecode(v));
}

function safeDecode(v: string): string {
  try {
    return decodeURIComponent(v);
  } catch {
    return v;
  }
}

/** gRPC PROTOCOL-HTTP2 "Status-Message": UTF-8, then %XX for every byte outside 0x20–0x7E and for '%'. */
export function encodeGrpcMessage(message: string): string {
  let out = '';
  for (const byte of Buffer.from(message, 'utf8')) {
    out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}
