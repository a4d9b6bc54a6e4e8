/** Fixed data keys for tests (LDBOX_DATA_KEY): base64 of 32 bytes each. Never used outside the test suite. */
export const TEST_DATA_KEY = Buffer.alloc(32, 0xa1).toString('base64');
export const TEST_DATA_KEY_B = Buffer.alloc(32, 0xb2).toString('base64');
