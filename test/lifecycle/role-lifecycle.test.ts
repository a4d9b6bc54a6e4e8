/**
 * RoleLifecycle (src/lifecycle/role-lifecycle.ts): the named states, close() draining within its grace,
 * destroy() cutting the grace short, and both being idempotent. No servers: a fake role records its steps.
 */
import t from 'tap';
import { type Grace, RoleLifecycle } from '../../src/lifecycle/role-lifecycle.js';

/** A role whose in-flight work is one promise the test settles. */
class FakeRole extends RoleLifecycle {
  readonly steps: string[] = [];
  work: Promise<void> = new Promise(() => {});
  finishWork: () => void = () => {};
  constructor() {
    super();
    this.work = new Promise((r) => (this.finishWork = r));
  }
  start(): void {
    this.started();
  }
  get wasDestroyed(): boolean {
    return this.destroyed;
  }
  protected async drain(grace: Grace): Promise<void> {
    this.steps.push(`drain ${grace.timeoutMs}`);
    this.steps.push((await grace.within(this.work)) ? 'drained' : 'grace over');
  }
  protected async release(): Promise<void> {
    this.steps.push(`release (state ${this.state})`);
  }
}

t.test('starting → ready → draining → closed; close() lets work in flight finish', async (t) => {
  const role = new FakeRole();
  t.equal(role.state, 'starting');
  role.start();
  t.equal(role.state, 'ready');
  t.equal(role.stopping, false);
  const closed = role.close(60_000);
  t.equal(role.state, 'draining');
  t.equal(role.stopping, true);
  role.finishWork();
  await closed;
  t.equal(role.state, 'closed');
  t.same(role.steps, ['drain 60000', 'drained', 'release (state draining)']);
  t.equal(role.wasDestroyed, false);
});

t.test('close() stops waiting when its timeout passes', async (t) => {
  const role = new FakeRole();
  role.start();
  await role.close(20);
  t.same(role.steps, ['drain 20', 'grace over', 'release (state draining)']);
  t.equal(role.state, 'closed');
});

t.test('close() is idempotent: every call returns the same promise, the steps run once', async (t) => {
  const role = new FakeRole();
  role.start();
  const first = role.close(20);
  t.equal(role.close(5000), first);
  await first;
  await role.close();
  t.same(role.steps, ['drain 20', 'grace over', 'release (state draining)']);
});

t.test('destroy() during close() cuts the grace short and returns the same promise', async (t) => {
  const role = new FakeRole();
  role.start();
  const closing = role.close(600_000);
  const destroying = role.destroy();
  t.equal(destroying, closing);
  await destroying;
  t.same(role.steps, ['drain 600000', 'grace over', 'release (state draining)']);
  t.equal(role.wasDestroyed, true);
  t.equal(role.state, 'closed');
});

t.test('destroy() alone gives no grace', async (t) => {
  const role = new FakeRole();
  role.start();
  await role.destroy();
  t.same(role.steps, ['drain 0', 'grace over', 'release (state draining)']);
  t.equal(role.state, 'closed');
});

t.test('release runs even when drain throws, and the error reaches the caller', async (t) => {
  class Failing extends FakeRole {
    protected override async drain(): Promise<void> {
      throw new Error('drain failed');
    }
  }
  const role = new Failing();
  role.start();
  await t.rejects(role.close(), { message: 'drain failed' });
  t.same(role.steps, ['release (state draining)']);
  t.equal(role.state, 'closed');
});
