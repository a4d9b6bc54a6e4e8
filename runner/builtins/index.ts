import type { BuiltinModule, BuiltinTable, GuestBinding } from './builtin.js';
import { UTILITIES } from './utilities.js';

export type { BuiltinConfig, BuiltinContext, BuiltinModule, BuiltinTable, GuestBinding } from './builtin.js';
export { DEFAULT_BUILTIN_CONFIG } from './builtin.js';

/** Every area's built-ins (spec "Sandbox functions"); ld.log lives in the prelude on top of `log`. */
const MODULES: readonly BuiltinModule[] = [
  UTILITIES,
];

/** Every host built-in, by the name the guest bridge calls it with. */
export const BUILTINS: BuiltinTable = {
  sync: Object.assign({}, ...MODULES.map((m) => m.sync ?? {})),
  async: Object.assign({}, ...MODULES.map((m) => m.async ?? {})),
};

/** How the built-ins appear in the guest. */
export const GUEST_BINDINGS: readonly GuestBinding[] = MODULES.flatMap((m) => m.bindings);
