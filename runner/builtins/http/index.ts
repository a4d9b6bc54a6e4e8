import type { BuiltinModule } from '../guest-boundary.js';
import { request } from './request.js';

/**
 * The HTTP built-ins: `ld.request` (spec "ld.request(options)"). The HTTP core (`sendRequest`, the
 * egress guard) is exported for the other HTTP built-ins such as `ld.cloudRequest`.
 */
export const HTTP: BuiltinModule = {
  async: { request },
  bindings: [{ guest: 'request', host: 'request', mode: 'http' }],
};

export { request, prepareRequest, type RequestOptions } from './request.js';
export {
  sendRequest,
  countRequest,
  displayUrl,
  HTTP_METHODS,
  RESPONSE_TYPES,
  type HttpMethod,
  type ResponseType,
  type PreparedRequest,
  type SendOptions,
  type HttpResult,
  type TextResult,
  type BinaryResult,
  type ResponseHeaders,
} from './send-request.js';
export { encodeBody, appendValue, type EncodedBody } from './request-body.js';
export { createEgressAgent, egressAgentFor, type EgressAgent, type EgressAgentOptions, type Resolver } from './egress-agent.js';
export {
  EgressGuard,
  EgressConfigError,
  EgressRefusedError,
  classifyAddress,
  isPublicAddress,
  isEgressRefused,
  type AddressKind,
} from './egress-guard.js';
