/**
 * Registers the ld.* built-ins (runner/builtins) for the sandboxes of this thread, as a side effect of
 * loading the sandbox's surface (index.ts). This is the one file of runner/sandbox that names the concrete
 * table; it stands in for the worker (runner/pool/worker.ts, the runner's composition root), which is
 * to call `registerBuiltins` itself.
 */
import { BUILTINS, GUEST_BINDINGS } from '../builtins/index.js';
import { registerBuiltins } from './builtin-registry.js';

registerBuiltins({ table: BUILTINS, bindings: GUEST_BINDINGS });
