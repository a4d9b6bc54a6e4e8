/**
 * The executor's line per execution: a success is a debug line (its record and the metrics keep it, and at
 * production rates an info line each is the log pipeline's load), anything else stays at info so that an
 * operator running at the default level sees every execution that did not succeed, with its ids.
 */
import t from 'tap';
import { pino } from 'pino';
import type { Logger } from '../../src/logging/logger.js';
import { hook } from '../gateway/harness.js';
import { waitFor } from '../nats/util.js';
import { createFlow, sharedRunner, stackFixture, waitForFinish } from './harness.js';

const DEBUG = 20;
const INFO = 30;

/** A debug-level pino logger writing parsed lines into `lines`. */
function capture(lines: Array<Record<string, unknown>>): Logger {
  return pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s)) }) as unknown as Logger;
}

// A runner process of its own: one in this process would run under tap's module loader, slowly (harness.ts).
const runner = sharedRunner(t);

t.test('a succeeded execution is logged at debug, a failed one at info', async (t) => {
  const lines: Array<Record<string, unknown>> = [];
  const { base } = await stackFixture(t, { executorLog: capture(lines), runner: await runner() });
  const ok = await createFlow(base, [{ id: 'ok', code: 'return 1', input: {} }]);
  const bad = await createFlow(base, [{ id: 'bad', code: 'throw new Error("no")', input: {} }]);

  const lineOf = async (workflowId: string): Promise<Record<string, unknown>> => {
    const r = await hook(base, workflowId, { body: '{}', headers: { 'content-type': 'application/json' } });
    t.equal(r.status, 202, r.text);
    const ex = await waitForFinish(base, r.json.executionId);
    // The line follows the final record: wait for it, not for a time.
    const ofThis = (l: Record<string, unknown>) => l.msg === 'execution' && l.executionId === ex.id;
    await waitFor(() => lines.some(ofThis), 20_000, `the 'execution' line of ${ex.id}`);
    return lines.find(ofThis)!;
  };

  const succeeded = await lineOf(ok.id);
  t.match(succeeded, { level: DEBUG, outcome: 'succeeded', workflowId: ok.id, attempt: 1 });
  const failed = await lineOf(bad.id);
  t.match(failed, { level: INFO, outcome: 'failed', workflowId: bad.id, attempt: 1 });
});
