import type { AsyncBuiltin, BuiltinContext, BuiltinModule } from '../guest-boundary.js';
import { type CloudMethod, type CloudResponseType, parseCloudRequestOptions } from './cloud-request-options.js';
import { signSigV4 } from './sigv4-signer.js';

/** A signed request ready for the wire: every header (lower-case names, signature included) and the exact body that was signed. */
export interface PreparedRequest {
  method: CloudMethod;
  url: string;
  headers: Record<string, string>;
  body: Uint8Array | string | undefined;
}

export interface SendOptions {
  responseType: CloudResponseType;
  timeoutMs?: number;
  /** Always 0: a redirect response is the result (see createCloudRequest). */
  maxRedirects: number;
  /** The built-in's name for error messages. */
  name: string;
}

/**
 * Sends a prepared request and resolves to ld.request's result shape; the HTTP core provides it (egress
 * guard, request count, response limits). It must send the URL, headers and body as given: any change to
 * a signed header, the path, the query or the body breaks the signature.
 */
export type SendRequest = (prepared: PreparedRequest, options: SendOptions, ctx: BuiltinContext) => Promise<unknown>;

/**
 * `ld.cloudRequest(options)` (spec "ld.cloudRequest(options)"): checks the options, signs the request with
 * SigV4 at call time (sigv4-signer.ts) and hands it to `send`. As with ld.request, every failure is a
 * rejection of the returned promise. Redirects are not followed: the signature covers host and path, so
 * a redirected request would fail anyway, and following one would carry x-amz-security-token (a credential)
 * to wherever the Location points.
 */
export function createCloudRequest(send: SendRequest): AsyncBuiltin {
  return async (args, ctx) => {
    const o = parseCloudRequestOptions(args);
    const signed = await signSigV4(
      { method: o.method, url: o.url, headers: o.headers, body: o.body },
      { region: o.region, service: o.service, credentials: o.credentials },
    );
    const options: SendOptions = { responseType: o.responseType, maxRedirects: 0, name: 'ld.cloudRequest' };
    if (o.timeoutMs !== undefined) options.timeoutMs = o.timeoutMs;
    return send({ method: o.method, url: signed.url, headers: signed.headers, body: o.body }, options, ctx);
  };
}

/** The cloud built-ins: `ld.cloudRequest`, also reachable as `ld.awsRequest` (the name other platforms' integration code uses). */
export const CLOUD = (send: SendRequest): BuiltinModule => ({
  async: { cloudRequest: createCloudRequest(send) },
  bindings: [
    { guest: 'cloudRequest', host: 'cloudRequest', mode: 'http' },
    { guest: 'awsRequest', host: 'cloudRequest', mode: 'http' },
  ],
});
