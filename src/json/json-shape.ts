/**
 * The nesting depth and the number of values of JSON text, counted in one pass without parsing (strings
 * skipped), so that hostile text is measured before anything is built from it or a recursive parser
 * sees it: webhook bodies (gateway/webhook-payload.ts) and sandbox results (runner/results).
 *
 * `items` counts array elements and object members, nested ones included. With `depthLimit`, the scan
 * stops as soon as the depth passes it (the answer is then only "deeper than the limit").
 */
export function jsonShape(text: string, depthLimit = Infinity): { depth: number; items: number } {
  let depth = 0;
  let max = 0;
  let items = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x2c)
      items++; // a comma separates two values of the enclosing container
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) {
        max = depth;
        if (max > depthLimit) break;
      }
      const next = text.charCodeAt(i + 1);
      if (next !== 0x5d && next !== 0x7d) items++; // the first value of a non-empty container
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return { depth: max, items };
}
