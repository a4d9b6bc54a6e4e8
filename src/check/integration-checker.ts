import type * as TypeScript from 'typescript';
import { missingFields } from './missing-fields.js';
import { INSTEAD, NO_MODULES } from '../guest/left-out-globals.js';

/** The result kinds a check knows (runner.proto ResultKind; `ldbox run --kind`). */
export const CHECK_KINDS = ['generic', 'files', 'native-search', 'native-download'] as const;
export type CheckKind = (typeof CHECK_KINDS)[number];

/** The declared return type of each kind: its shape in types/ld.d.ts (none for generic: any JSON value). */
const RETURNS: Readonly<Record<CheckKind, string | undefined>> = {
  generic: undefined,
  files: 'ld.FilesResult',
  'native-search': 'ld.NativeSearchResult',
  'native-download': 'ld.NativeDownloadResult',
};

export interface CodeFile {
  /** How problems name the file (the path as given). */
  name: string;
  text: string;
}

/** One problem, at the user's own line and column (1-based). Continuation lines of a message are indented. */
export interface CheckProblem {
  file: string;
  line: number;
  column: number;
  message: string;
}

export interface IntegrationChecker {
  /** Checks each file on its own (no file sees another's names); problems in file order, then by position. */
  check(files: readonly CodeFile[], kind: CheckKind): CheckProblem[];
}

/** "Cannot find name 'x'", with TypeScript's suggestions of a lib or @types package. */
const CANNOT_FIND_NAME = new Set([2304, 2580, 2581, 2582, 2583, 2584, 2591, 2592, 2593]);
/** "missing the following properties" / "Property 'x' is missing" / "not assignable": replaced by the full list. */
const MISSING_PROPERTIES = new Set([2739, 2740, 2741]);
const NOT_ASSIGNABLE = 2322;
/** "A function whose declared type is neither 'undefined', 'void', nor 'any' must return a value." */
const MUST_RETURN = 2355;
/** "Function lacks ending return statement and return type does not include 'undefined'." */
const LACKS_RETURN = 2366;

/**
 * Type-checks integration code as the sandbox runs it: each file's text is the body of an async
 * arrow function (top-level `return` and `await`), strict, with only the ES2023 language and the
 * sandbox's globals of types/ld.d.ts (`data`, `ld`, `atob`, `btoa`, `Buffer`, `FormData`). The wrapper
 * is written on the code's first line, as the sandbox's is (runner/sandbox/user-stack.ts), so lines are
 * the user's own and only line 1's columns are shifted back. With a result kind, the wrapper declares
 * the kind's shape as its return type, so every `return` is checked against it.
 *
 * The lib and declaration files are parsed once per checker and shared by every program it creates, so
 * checking many files (the test suite, a folder of integrations) pays for them once.
 */
export function createIntegrationChecker(ts: typeof TypeScript, declarationsPath: string): IntegrationChecker {
  const options: TypeScript.CompilerOptions = {
    allowJs: true,
    checkJs: true,
    noEmit: true,
    strict: true,
    // Plain JavaScript has no annotations to give: an untyped callback parameter is not a problem.
    noImplicitAny: false,
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2023.d.ts'],
    types: [],
    // Every code file is a module of its own, so the files of one program share no top-level scope.
    moduleDetection: ts.ModuleDetectionKind.Force,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    noResolve: true,
    skipLibCheck: true,
  };
  const host = ts.createCompilerHost(options);
  const shared = new Map<string, TypeScript.SourceFile>();
  let code = new Map<string, string>();
  const readSharedFile = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, languageVersion, onError) => {
    const text = code.get(fileName);
    if (text !== undefined) return ts.createSourceFile(fileName, text, languageVersion, true, ts.ScriptKind.JS);
    let sf = shared.get(fileName);
    if (sf === undefined) {
      sf = readSharedFile(fileName, languageVersion, onError);
      if (sf !== undefined) shared.set(fileName, sf);
    }
    return sf;
  };
  const fileExists = host.fileExists.bind(host);
  const readFile = host.readFile.bind(host);
  host.fileExists = (f) => code.has(f) || fileExists(f);
  host.readFile = (f) => code.get(f) ?? readFile(f);
  host.writeFile = () => {};
  let previous: TypeScript.Program | undefined;

  return {
    check(files, kind) {
      const wrappers = files.map((f, i) => ({ file: f, virtual: `/ldbox-check/${i}/code.js`, prefix: wrapperPrefix(kind) }));
      code = new Map(wrappers.map((w) => [w.virtual, `${w.prefix}${w.file.text}\n};`]));
      const program = ts.createProgram({ rootNames: [declarationsPath, ...wrappers.map((w) => w.virtual)], options, host, oldProgram: previous });
      previous = program;
      const checker = program.getTypeChecker();
      const global = program
        .getGlobalDiagnostics()
        .concat(program.getOptionsDiagnostics(), declarationsPath ? program.getSemanticDiagnostics(program.getSourceFile(declarationsPath)) : []);
      if (global.length > 0) {
        throw new Error(`the declarations ${declarationsPath} do not compile: ${ts.flattenDiagnosticMessageText(global[0]!.messageText, ' ')}`);
      }
      return wrappers.flatMap((w) => checkOne(ts, program, checker, w.file, program.getSourceFile(w.virtual)!, w.prefix.length, kind));
    },
  };
}

/** The wrapper's text before the code: on the code's first line, so the code's line numbers stay its own. */
function wrapperPrefix(kind: CheckKind): string {
  const returns = RETURNS[kind];
  return `const __ldbox_code = ${returns === undefined ? '' : `/** @returns {Promise<${returns}>} */ `}async () => {`;
}

function checkOne(
  ts: typeof TypeScript,
  program: TypeScript.Program,
  checker: TypeScript.TypeChecker,
  file: CodeFile,
  sf: TypeScript.SourceFile,
  prefixLength: number,
  kind: CheckKind,
): CheckProblem[] {
  const at = (pos: number) => userPosition(sf, pos, prefixLength, file.text.length);
  const problems: (CheckProblem & { pos: number })[] = [];
  const add = (pos: number, message: string) => problems.push({ file: file.name, ...at(pos), message, pos });

  // import/export: the sandbox refuses them; everything TypeScript says inside them is beside the point.
  const refused: [number, number][] = [];
  const body = wrapperBody(ts, sf);
  const isUndeclared = (id: TypeScript.Identifier) => (checker.getSymbolAtLocation(id)?.declarations ?? []).every((d) => d.getSourceFile() !== sf);
  const visit = (node: TypeScript.Node): void => {
    if (
      ts.isImportDeclaration(node) ||
      ts.isImportEqualsDeclaration(node) ||
      ts.isExportDeclaration(node) ||
      ts.isExportAssignment(node) ||
      isExported(ts, node)
    ) {
      const keyword = ts.isImportDeclaration(node) || ts.isImportEqualsDeclaration(node) ? 'import' : 'export';
      add(node.getStart(sf), `${keyword} statements are not available in the sandbox: ${NO_MODULES}`);
      refused.push([node.getStart(sf), node.end]);
      return;
    }
    // A JavaScript file's require('x') is an import to TypeScript; the sandbox has no require at all.
    if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'require' && isUndeclared(node.expression)) {
      add(node.getStart(sf), `require is not available in the sandbox: ${INSTEAD.require}`);
      refused.push([node.getStart(sf), node.end]);
      return;
    }
    if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const arg = node.arguments[0];
      const what = arg !== undefined && ts.isStringLiteralLike(arg) ? `import('${arg.text}')` : 'import(...)';
      add(node.getStart(sf), `${what} is not available in the sandbox: ${NO_MODULES}`);
      refused.push([node.getStart(sf), node.end]);
      return;
    }
    ts.forEachChild(node, visit);
  };
  if (body) body.statements.forEach(visit);

  // Returned object literals: every missing field, which TypeScript lists only in part.
  const complete = new Set<number>();
  if (body && RETURNS[kind] !== undefined) {
    for (const literal of returnedObjectLiterals(ts, body)) {
      const missing = missingFields(ts, checker, literal);
      if (missing === undefined) continue;
      add(literal.getStart(sf), missing.message);
      complete.add(literal.getStart(sf));
    }
  }

  const inside = (pos: number) => refused.some(([s, e]) => pos >= s && pos < e);
  const diagnostics = [...program.getSyntacticDiagnostics(sf), ...program.getSemanticDiagnostics(sf)];
  for (const d of diagnostics) {
    const start = d.start ?? 0;
    if (inside(start)) continue;
    if (MISSING_PROPERTIES.has(d.code) || d.code === NOT_ASSIGNABLE) {
      // Already listed in full, at the literal itself or inside the returned value TypeScript points at.
      const [from, to] = returnedSpan(ts, sf, start) ?? [start, start + 1];
      if ([...complete].some((p) => p >= from && p < to)) continue;
    }
    add(start, describe(ts, checker, sf, d, prefixLength, kind));
  }
  problems.sort((a, b) => a.pos - b.pos);
  return problems.map(({ pos: _pos, ...p }) => p);
}

/** The message of one diagnostic, in the sandbox's terms where TypeScript's would mislead. */
function describe(
  ts: typeof TypeScript,
  checker: TypeScript.TypeChecker,
  sf: TypeScript.SourceFile,
  d: TypeScript.Diagnostic,
  prefixLength: number,
  kind: CheckKind,
): string {
  const text = ts.flattenDiagnosticMessageText(d.messageText, '\n');
  const start = d.start ?? 0;
  if (start < prefixLength && d.code === MUST_RETURN)
    return `the code returns nothing, but --kind ${kind} expects a result of type ${RETURNS[kind]}: end it with return`;
  if (start < prefixLength && d.code === LACKS_RETURN) {
    return `not every path of the code ends with return, but --kind ${kind} expects a result of type ${RETURNS[kind]} (a path without return gives null)`;
  }
  if (CANNOT_FIND_NAME.has(d.code)) {
    const name = /^Cannot find name '([^']+)'/.exec(text)?.[1];
    if (name !== undefined) {
      const instead = INSTEAD[name];
      if (instead !== undefined) return `${name} is not available in the sandbox: ${instead}`;
      if (d.code !== 2304) return `Cannot find name '${name}': the sandbox has the language's own globals and data, ld, atob, btoa, Buffer, FormData`;
    }
  }
  if (MISSING_PROPERTIES.has(d.code) && d.length !== undefined) {
    const node = expressionAt(ts, sf, start, d.length);
    const missing = node && missingFields(ts, checker, node);
    if (missing) return missing.message;
  }
  return text.replace(/\n/g, '\n  ');
}

/** Line and column (1-based) in the user's own text of a position in the wrapped text. */
function userPosition(sf: TypeScript.SourceFile, pos: number, prefixLength: number, codeLength: number): { line: number; column: number } {
  if (pos < prefixLength) return { line: 1, column: 1 };
  const p = sf.getLineAndCharacterOfPosition(Math.min(pos, prefixLength + codeLength));
  return { line: p.line + 1, column: p.line === 0 ? p.character - prefixLength + 1 : p.character + 1 };
}

/** The block of the wrapper's arrow function (undefined when the code broke out of it). */
function wrapperBody(ts: typeof TypeScript, sf: TypeScript.SourceFile): TypeScript.Block | undefined {
  const first = sf.statements[0];
  if (first === undefined || !ts.isVariableStatement(first)) return undefined;
  const init = first.declarationList.declarations[0]?.initializer;
  return init !== undefined && ts.isArrowFunction(init) && ts.isBlock(init.body) ? init.body : undefined;
}

function isExported(ts: typeof TypeScript, node: TypeScript.Node): boolean {
  return ts.canHaveModifiers(node) && (ts.getModifiers(node)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword) ?? false);
}

/** Object literals that are (part of) a value the code returns: not those of nested functions' returns. */
function returnedObjectLiterals(ts: typeof TypeScript, body: TypeScript.Block): TypeScript.ObjectLiteralExpression[] {
  const out: TypeScript.ObjectLiteralExpression[] = [];
  const value = (e: TypeScript.Expression): void => {
    if (ts.isObjectLiteralExpression(e)) {
      out.push(e);
      for (const p of e.properties) if (ts.isPropertyAssignment(p)) value(p.initializer);
    } else if (ts.isArrayLiteralExpression(e)) {
      for (const el of e.elements) value(ts.isSpreadElement(el) ? el.expression : el);
    } else if (ts.isParenthesizedExpression(e) || ts.isAwaitExpression(e)) {
      value(e.expression);
    } else if (ts.isConditionalExpression(e)) {
      value(e.whenTrue);
      value(e.whenFalse);
    }
  };
  const statements = (node: TypeScript.Node): void => {
    if (ts.isFunctionLike(node) || ts.isClassLike(node)) return;
    if (ts.isReturnStatement(node) && node.expression !== undefined) value(node.expression);
    ts.forEachChild(node, statements);
  };
  ts.forEachChild(body, statements);
  return out;
}

/**
 * The span of the value of the `return` statement starting at `pos`: TypeScript places a wrong return
 * value of an async function at the `return` keyword. Undefined when no return statement starts there.
 */
function returnedSpan(ts: typeof TypeScript, sf: TypeScript.SourceFile, pos: number): [number, number] | undefined {
  let found: [number, number] | undefined;
  const visit = (node: TypeScript.Node): void => {
    if (found !== undefined || node.end <= pos || node.getStart(sf) > pos) return;
    if (ts.isReturnStatement(node) && node.getStart(sf) === pos && node.expression !== undefined) {
      found = [node.expression.getStart(sf), node.expression.end];
      return;
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

/** The outermost expression that spans exactly `start`..`start + length`. */
function expressionAt(ts: typeof TypeScript, sf: TypeScript.SourceFile, start: number, length: number): TypeScript.Expression | undefined {
  let found: TypeScript.Expression | undefined;
  const visit = (node: TypeScript.Node): void => {
    if (found || node.end < start || node.getStart(sf) > start) return;
    if (node.getStart(sf) === start && node.end === start + length && ts.isExpression(node)) {
      found = node;
      return;
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}
