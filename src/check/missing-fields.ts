import type * as TypeScript from 'typescript';

/** The fields a value lacks against its expected shape, e.g. `missing fields of NativeSearchItem: documentId, title`. */
export interface MissingFields {
  /** The one-line problem. */
  message: string;
}

/**
 * Every required property that the value at `node` lacks against the type the context expects of it
 * (a result kind's shape through the wrapper's `@returns`, an `ld.*` option). TypeScript names at most
 * four ("…, and 3 more") and, once a present field has a wrong type, none at all; this lists them all,
 * as the runner does at run time (runner/results, ResultProblems).
 *
 * For a union (a file is `{fileName, mimeType}` with `base64` or `text`), the members closest to the
 * value (the most fields in common) are compared: fields all of them need are listed, and what differs
 * is offered as alternatives (`and one of: base64, text`).
 */
export function missingFields(ts: typeof TypeScript, checker: TypeScript.TypeChecker, node: TypeScript.Expression): MissingFields | undefined {
  const source = checker.getTypeAtLocation(node);
  if (source.flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) return undefined;
  const target = checker.getContextualType(node);
  if (target === undefined || target.flags & ts.TypeFlags.Any) return undefined;
  const has = new Set(checker.getPropertiesOfType(source).map((p) => p.getName()));
  const members = (target.isUnion() ? target.types : [target]).filter(
    (m) =>
      (m.flags & ts.TypeFlags.Object || m.isIntersection()) &&
      !checker.isArrayLikeType(m) &&
      checker.getSignaturesOfType(m, ts.SignatureKind.Call).length === 0,
  );
  if (members.length === 0) return undefined;
  const shapes = members.map((m) => {
    const props = checker.getPropertiesOfType(m);
    return {
      type: m,
      common: props.filter((p) => has.has(p.getName())).length,
      missing: props.filter((p) => !(p.flags & ts.SymbolFlags.Optional) && !has.has(p.getName())).map((p) => p.getName()),
    };
  });
  if (shapes.some((s) => s.missing.length === 0)) return undefined;
  // The closest members: the most fields in common with the value, then the fewest missing.
  const most = Math.max(...shapes.map((s) => s.common));
  const fewest = Math.min(...shapes.filter((s) => s.common === most).map((s) => s.missing.length));
  const closest = shapes.filter((s) => s.common === most && s.missing.length === fewest);
  const all = closest.map((s) => s.missing);
  const common = all[0]!.filter((name) => all.every((m) => m.includes(name)));
  const alternatives = all.map((m) => m.filter((name) => !common.includes(name))).filter((m) => m.length > 0);
  const name = closest.length === 1 ? shapeName(checker, closest[0]!.type) : undefined;
  const of = name === undefined ? '' : ` of ${name}`;
  const oneOf = alternatives.map((a) => a.join(' + ')).join(', ');
  if (common.length === 0) return { message: `missing one of the fields${of}: ${oneOf}` };
  const fields = `missing ${common.length === 1 && alternatives.length === 0 ? 'field' : 'fields'}${of}: ${common.join(', ')}`;
  return { message: alternatives.length === 0 ? fields : `${fields} and one of ${oneOf}` };
}

/** A type's own name (`NativeSearchItem`), or its text when short; undefined for a long anonymous shape. */
function shapeName(checker: TypeScript.TypeChecker, type: TypeScript.Type): string | undefined {
  const named = type.aliasSymbol?.getName() ?? type.getSymbol()?.getName();
  if (named !== undefined && !named.startsWith('__')) return named;
  const text = checker.typeToString(type);
  return text.length <= 80 ? text : undefined;
}
