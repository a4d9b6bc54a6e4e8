import type { BuiltinModule, BuiltinTable, GuestBinding } from './guest-boundary.js';
import { CLOUD } from './cloud/cloud-request.js';
import { HTTP, sendRequest } from './http/index.js';
import { UTILITIES } from './utilities.js';
import { loadSigV4Signer } from './cloud/sigv4-signer.js';
import { undiciLib } from './http/egress-agent.js';
import { RS256 } from './crypto/rs256.js';
import { SQL_CHECKS } from './sql/sql-checks.js';
import { FORMATS } from './formats/index.js';

export type { BuiltinConfig, BuiltinContext, BuiltinModule, BuiltinTable, GuestBinding, HostBuiltins } from './guest-boundary.js';
export { DEFAULT_BUILTIN_CONFIG } from './guest-boundary.js';

/** Every area's built-ins (spec "Sandbox functions"); ld.log lives in the prelude on top of `log`. */
const MODULES: readonly BuiltinModule[] = [UTILITIES, HTTP, CLOUD(sendRequest), SQL_CHECKS, RS256, FORMATS];

/** Every host built-in, by the name the guest bridge calls it with. */
export const BUILTINS: BuiltinTable = {
  sync: Object.assign({}, ...MODULES.map((m) => m.sync ?? {})),
  async: Object.assign({}, ...MODULES.map((m) => m.async ?? {})),
};

/** How the built-ins appear in the guest. */
export const GUEST_BINDINGS: readonly GuestBinding[] = MODULES.flatMap((m) => m.bindings);

/**
 * Loads the libraries behind ld.request and ld.cloudRequest, which a worker otherwise loads on the first
 * call that uses them (~180 ms inside that call): a runner that warms up (LDBOX_RUNNER_WARMUP_CALLS) has its
 * workers do it at start, so that no call meets that cost. The format libraries stay on first use (35 MiB
 * per worker, see formats/format-libs.ts).
 */
export function preloadRequestLibraries(): void {
  undiciLib();
  loadSigV4Signer();
}
