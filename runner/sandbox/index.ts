export { prepareAhead, runSandbox, SandboxCancelledError, SandboxInternalError, type SandboxLimits, type CancelSource } from './run-sandbox.js';
export { WasmModulePool, capBytesFor, type CappedModule, type WasmModulePoolOptions } from './wasm-modules.js';
export { collectSecrets } from './redactor.js';
export { registerBuiltins } from './builtin-registry.js';
export type * from './types.js';
