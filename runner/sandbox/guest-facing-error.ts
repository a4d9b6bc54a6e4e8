/** The error classes a built-in may raise in the guest; the guest rethrows them as its own classes. */
export type GuestErrorName = 'TypeError' | 'RangeError' | 'SyntaxError' | 'Error';

/**
 * A failure meant for user code. Its message is shown to the guest as is (after redaction), so it must
 * never hold host paths or secrets. Any other host error reaches the guest as a generic message.
 */
export class GuestFacingError extends Error {
  constructor(
    readonly guestName: GuestErrorName,
    message: string,
  ) {
    super(message);
  }
}
