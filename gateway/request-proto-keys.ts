/**
 * Own `__proto__` keys in control-plane requests (a node `input` template of CreateWorkflow, say) stay
 * data: protobuf-es loses them while connect-node decodes the request (src/json/proto-keys-requests.ts
 * explains how), and connect-node has no hook that sees a binary request's bytes. So:
 *
 * - {@link requestBytesContext} (connect-node's `contextValues`, called before the body is read) taps the
 *   body of each request whose message can hold a Struct: the chunks connect-node reads are kept as they
 *   pass. Other requests are not tapped.
 * - {@link keepProtoKeysInRequests}, an interceptor (it runs after decoding, before the handler), turns the
 *   tapped body into the message bytes (undoing Content-Encoding, or the gRPC-Web envelope and its
 *   compression, as connect-node did) and puts back the fields that lost a key.
 *
 * Test: test/gateway/workflow-proto-keys.test.ts.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { promisify } from 'node:util';
import { brotliDecompress, gunzip } from 'node:zlib';
import type { DescMessage } from '@bufbuild/protobuf';
import { type ContextValues, createContextKey, createContextValues, type Interceptor } from '@connectrpc/connect';
import { carriesStructs, keepProtoKeysOfRequest } from '../src/json/proto-keys-requests.js';

/** The tapped request: its headers and the body chunks read so far. */
interface TappedBody {
  headers: IncomingHttpHeaders;
  chunks: Buffer[];
  /** The most bytes a decompressed message may have (connect-node's readMaxBytes). */
  maxBytes: number;
}

const TAPPED_BODY = createContextKey<TappedBody | undefined>(undefined, { description: 'the request body as connect-node read it' });

/**
 * Context values for a control-plane request whose message is `input` (undefined: not a control-plane
 * path): the body is tapped when that message can hold a Struct.
 */
export function requestBytesContext(
  req: { headers: IncomingHttpHeaders } & AsyncIterable<unknown>,
  input: DescMessage | undefined,
  maxBytes: number,
): ContextValues {
  const values = createContextValues();
  if (input === undefined || !carriesStructs(input)) return values;
  const tapped: TappedBody = { headers: req.headers, chunks: [], maxBytes };
  // connect-node reads the body with `for await (const chunk of req)`: the instance's own iterator is
  // found first and hands every chunk on unchanged (the original one, bound, reads the stream).
  const read = req[Symbol.asyncIterator].bind(req);
  Object.defineProperty(req, Symbol.asyncIterator, {
    configurable: true,
    value: async function* () {
      for await (const chunk of { [Symbol.asyncIterator]: read }) {
        tapped.chunks.push(chunk as Buffer);
        yield chunk;
      }
    },
  });
  return values.set(TAPPED_BODY, tapped);
}

/** Puts back the Struct fields of a decoded unary request that lost an own `__proto__` key. */
export function keepProtoKeysInRequests(): Interceptor {
  return (next) => async (req) => {
    const tapped = req.contextValues.get(TAPPED_BODY);
    if (tapped !== undefined && !req.stream) {
      const bytes = await messageBytes(tapped);
      const type = contentType(tapped.headers);
      if (bytes !== undefined) keepProtoKeysOfRequest(req.method.input, req.message, bytes, type.endsWith('json') ? 'json' : 'binary');
    }
    return next(req);
  };
}

function contentType(headers: IncomingHttpHeaders): string {
  return (headers['content-type'] ?? '').split(';', 1)[0]!.trim().toLowerCase();
}

const inflate: Record<string, (data: Buffer, options: { maxOutputLength: number }) => Promise<Buffer>> = {
  gzip: promisify(gunzip),
  br: promisify(brotliDecompress),
};

/** The message bytes of a tapped unary body, as connect-node decoded them; undefined without a body. */
async function messageBytes(tapped: TappedBody): Promise<Uint8Array | undefined> {
  const body = Buffer.concat(tapped.chunks);
  const decompress = (encoding: string | string[] | undefined, data: Buffer): Promise<Buffer> | Buffer => {
    const name = String(encoding ?? 'identity').toLowerCase();
    if (name === 'identity') return data;
    const f = inflate[name];
    // connect-node accepted the request, so it knew the encoding; one it knows and this does not is a bug here.
    if (f === undefined) throw new Error(`request encoding ${JSON.stringify(name)} is not handled`);
    return f(data, { maxOutputLength: tapped.maxBytes });
  };
  if (contentType(tapped.headers).startsWith('application/grpc-web')) {
    // One envelope: a flags byte (bit 0: compressed with grpc-encoding), a 32-bit length, the message.
    if (body.length < 5) return undefined;
    const data = body.subarray(5, 5 + body.readUInt32BE(1));
    return (body[0]! & 1) === 1 ? decompress(tapped.headers['grpc-encoding'], data) : data;
  }
  return body.length === 0 ? undefined : decompress(tapped.headers['content-encoding'], body);
}
