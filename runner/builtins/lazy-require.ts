import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/**
 * A library loaded on the first call of the returned function, then kept: for the built-ins' libraries,
 * which every worker thread would otherwise load at start whether or not a call ever uses them (undici
 * ~130 ms, AWS's SigV4 signer ~50 ms of a worker's start; format-libs.ts does the same for the format
 * libraries). `require`, so that a synchronous built-in can load one too; `name` must be a package whose
 * CommonJS entry is the one meant (the same instance for every caller in the thread).
 */
export function lazyRequire<T>(name: string): () => T {
  let lib: T | undefined;
  return () => (lib ??= require(name) as T);
}
