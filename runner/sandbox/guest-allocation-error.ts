/**
 * A copy from the host into the QuickJS module could not get memory there: the module's memory is at
 * its cap. Thrown by the checked allocator (wasm-modules.ts) before anything is written; the call ends
 * with ERROR_KIND_MEMORY_LIMIT and the module is never reused.
 */
export class GuestAllocationError extends Error {
  override readonly name = 'GuestAllocationError';

  constructor(readonly bytes: number) {
    super(`the sandbox's memory is full: ${bytes} bytes could not be copied into it`);
  }
}
