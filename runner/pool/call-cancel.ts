/**
 * What the pool needs of a caller's cancellation: an AbortSignal has it, and so does {@link CallCancel},
 * which the runner's own Execute routes use instead. An AbortController per call (made, subscribed to,
 * unsubscribed from) was ~3 % of the runner's main thread under load; the pool only ever listens once.
 */
export interface CancelSignal {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** A cancellation for one call, with room for one listener at a time (the pool's). */
export class CallCancel implements CancelSignal {
  aborted = false;
  private listener: (() => void) | undefined;

  cancel(): void {
    if (this.aborted) return;
    this.aborted = true;
    const listener = this.listener;
    this.listener = undefined;
    listener?.();
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    this.listener = listener;
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    if (this.listener === listener) this.listener = undefined;
  }
}
