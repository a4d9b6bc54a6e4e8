import type { HostBuiltins } from '../builtins/guest-boundary.js';

/**
 * The built-ins this thread's sandboxes serve. The sandbox names no concrete built-in (the contract is
 * runner/builtins/guest-boundary.ts): whoever composes the runner registers them once per thread,
 * before the first realm is prepared. A realm keeps the built-ins it was prepared with.
 */
let registered: HostBuiltins | undefined;

/** Sets the built-ins of realms prepared from now on (tests may register their own). */
export function registerBuiltins(builtins: HostBuiltins): void {
  registered = builtins;
}

/** The registered built-ins; throws when none were registered (a wiring mistake, not a user error). */
export function registeredBuiltins(): HostBuiltins {
  if (registered === undefined) throw new Error('no built-ins registered: call registerBuiltins before running a sandbox');
  return registered;
}
