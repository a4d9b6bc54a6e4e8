/**
 * LDBOX_BASE_URL, the public address webhook URLs are built on: checked and normalized once, at start-up.
 * Its own module so the gateway's config (read by `ldbox --help`) does not load the workflow model.
 */
import { WorkflowValidationError } from './validation-error.js';

/**
 * Checks LDBOX_BASE_URL: an absolute http(s) URL without credentials, query or fragment. Returns it
 * without trailing slashes (a path prefix such as `https://example.com/ldbox` is kept).
 */
export function normalizeBaseUrl(raw: string, name = 'LDBOX_BASE_URL'): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new WorkflowValidationError(name, `${name} must be an absolute http or https URL, got ${JSON.stringify(raw)}`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') {
    throw new WorkflowValidationError(name, `${name} must be an http or https URL without credentials, query or fragment, got ${JSON.stringify(raw)}`);
  }
  return url.href.replace(/\/+$/, '');
}
