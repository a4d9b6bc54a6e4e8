import type * as TypeScript from 'typescript';

/** TypeScript is not installed where `ldbox check` runs (an install without optional peer dependencies). */
export class TypeScriptMissingError extends Error {
  override readonly name = 'TypeScriptMissingError';
}

/**
 * Loads the TypeScript compiler for `ldbox check`. It is an optional peer dependency of the package, not
 * a dependency: the runner, gateway and executor never need it, and it would add ~20 MB to every
 * production image; whoever checks code has it, or gets it with one command (the error says which).
 */
export async function loadTypeScript(specifier = 'typescript'): Promise<typeof TypeScript> {
  try {
    const mod = (await import(specifier)) as { default?: typeof TypeScript } & typeof TypeScript;
    return mod.default ?? mod;
  } catch (err) {
    if (!isNotFound(err, specifier)) throw err;
    throw new TypeScriptMissingError(
      `ldbox check needs the TypeScript compiler, which is not installed here (it is an optional peer dependency of ldbox): ` +
        'install it next to ldbox with `npm install --save-dev typescript@5`',
      { cause: err },
    );
  }
}

/**
 * Whether `err` says that `specifier` itself could not be found. By its code, and else by its message: an
 * error that crossed from module loader hooks running on their own thread (a test runner's, say) can
 * arrive without its code.
 */
function isNotFound(err: unknown, specifier: string): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') return true;
  const message = err instanceof Error ? err.message : '';
  return message.startsWith(`Cannot find package '${specifier}'`) || message.startsWith(`Cannot find module '${specifier}'`);
}
