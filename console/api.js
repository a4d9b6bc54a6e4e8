/**
 * The console's one way to the control plane: Connect JSON POSTs to WorkflowService on this origin, with
 * the admin token from sessionStorage as `Authorization: Bearer …`. A failed call throws an ApiError with
 * the Connect code (`unauthenticated`, `not_found`, `invalid_argument`, …) and the gateway's message.
 */

const SERVICE = '/ldbox.workflows.v1.WorkflowService/';
const TOKEN_KEY = 'ldbox.adminToken';

export class ApiError extends Error {
  /**
   * @param {string} code the Connect error code, or `unavailable` when the gateway did not answer
   * @param {string} message
   */
  constructor(code, message) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
  }
}

/** The admin token of this tab, or null. */
export function savedToken() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function saveToken(token) {
  sessionStorage.setItem(TOKEN_KEY, token);
}

export function forgetToken() {
  sessionStorage.removeItem(TOKEN_KEY);
}

/**
 * Calls one WorkflowService method with a JSON request and returns the JSON response.
 * @param {string} method e.g. `ListExecutions`
 * @param {object} request
 * @param {AbortSignal} [signal] aborts the call when the view that made it is left
 */
export async function call(method, request, signal) {
  const token = savedToken();
  if (token === null) throw new ApiError('unauthenticated', 'not logged in');
  let res;
  try {
    res = await fetch(SERVICE + method, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify(request),
      cache: 'no-store',
      credentials: 'omit',
      signal,
    });
  } catch (err) {
    if (signal?.aborted) throw err;
    throw new ApiError('unavailable', `the gateway did not answer (${err.message})`);
  }
  const text = await res.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (!res.ok) throw new ApiError(typeof body?.code === 'string' ? body.code : `http_${res.status}`, body?.message ?? `HTTP ${res.status}`);
  return body ?? {};
}
