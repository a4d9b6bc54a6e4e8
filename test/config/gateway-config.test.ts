/** `loadGatewayConfig`: defaults and every rule's exact message (gateway/gateway-config.ts). */
import t from 'tap';
import { type GatewayConfig, loadGatewayConfig as loadWithoutKey } from '../../gateway/gateway-config.js';
import { TEST_DATA_KEY } from '../helpers/data-keys.js';
import { configErrorMessage } from '../helpers/config-errors.js';

/** The loader with a data key set (test/config/data-key-config.test.ts covers the key itself). */
const loadGatewayConfig = (env: Record<string, string | undefined>): GatewayConfig => loadWithoutKey({ LDBOX_DATA_KEY: TEST_DATA_KEY, ...env });
const withoutKeys = ({ dataKeys: _, ...rest }: GatewayConfig) => rest;

const MiB = 1024 * 1024;
const TOKEN = 'admin-token-0123456789';

const configError = (env: Record<string, string | undefined>) => configErrorMessage(loadGatewayConfig, { LDBOX_ADMIN_TOKEN: TOKEN, ...env });

t.test('defaults', async (t) => {
  t.same(withoutKeys(loadGatewayConfig({ LDBOX_ADMIN_TOKEN: TOKEN })), {
    host: '127.0.0.1',
    port: 8080,
    adminToken: TOKEN,
    baseUrl: 'http://127.0.0.1:8080',
    baseUrlSet: false,
    nats: { servers: ['127.0.0.1:4222'], shown: 'nats://127.0.0.1:4222' },
    webhookRate: 50,
    maxBodyBytes: 5 * MiB,
    stream: { maxMsgs: 1_000_000, maxBytes: 1024 * MiB, duplicateWindowMs: 120_000, replicas: 1 },
    idempotencyTtlMs: 86_400_000,
    executionRetentionMs: 7 * 86_400_000,
    throttleMaxDelayMs: 3_600_000,
    publishTimeoutMs: 10_000,
    signatureToleranceMs: 300_000,
    http: { maxConnections: 1024, maxStreamsPerConnection: 128, headersTimeoutMs: 20_000, bodyTimeoutMs: 30_000, idleTimeoutMs: 60_000 },
  });
});

t.test('LDBOX_SIGNATURE_TOLERANCE', async (t) => {
  t.equal(loadGatewayConfig({ LDBOX_ADMIN_TOKEN: TOKEN, LDBOX_SIGNATURE_TOLERANCE: '10' }).signatureToleranceMs, 600_000, 'plain digits are minutes');
  t.equal(loadGatewayConfig({ LDBOX_ADMIN_TOKEN: TOKEN, LDBOX_SIGNATURE_TOLERANCE: '1h' }).signatureToleranceMs, 3_600_000);
  t.equal(configError({ LDBOX_SIGNATURE_TOLERANCE: '2h' }), 'LDBOX_SIGNATURE_TOLERANCE must be from 1m to 1h, got "2h"');
});

t.test('settings', async (t) => {
  const c = loadGatewayConfig({
    LDBOX_ADMIN_TOKEN: TOKEN,
    LDBOX_GATEWAY_PORT: '9000',
    LDBOX_GATEWAY_HOST: '0.0.0.0',
    LDBOX_BASE_URL: 'https://hooks.example.com/ldbox/',
    NATS_URL: 'nats://nats.internal:4222',
    LDBOX_WEBHOOK_RATE: '0',
    LDBOX_MAX_BODY_BYTES: '1048576',
    LDBOX_JOBS_MAX_MSGS: '10',
    LDBOX_JOBS_REPLICAS: '3',
  });
  t.equal(c.port, 9000);
  t.equal(c.host, '0.0.0.0');
  t.equal(c.baseUrl, 'https://hooks.example.com/ldbox', 'trailing slash dropped');
  t.equal(c.baseUrlSet, true);
  t.strictSame(c.nats, { servers: ['nats.internal:4222'], shown: 'nats://nats.internal:4222' });
  t.equal(c.webhookRate, 0, '0 = off');
  t.equal(c.maxBodyBytes, MiB);
  t.same(c.stream, { maxMsgs: 10, maxBytes: 1024 * MiB, duplicateWindowMs: 120_000, replicas: 3 });
  t.equal(loadGatewayConfig({ LDBOX_ADMIN_TOKEN: TOKEN, LDBOX_GATEWAY_PORT: '9001' }).baseUrl, 'http://127.0.0.1:9001', 'the default base follows the port');
});

t.test('exact messages', async (t) => {
  t.equal(
    configError({ LDBOX_ADMIN_TOKEN: undefined }),
    'LDBOX_ADMIN_TOKEN is required: the control plane (WorkflowService) accepts only `Authorization: Bearer $LDBOX_ADMIN_TOKEN`',
  );
  t.equal(configError({ LDBOX_ADMIN_TOKEN: '' }), configError({ LDBOX_ADMIN_TOKEN: undefined }), 'empty = unset');
  t.equal(configError({ LDBOX_ADMIN_TOKEN: 'short' }), 'LDBOX_ADMIN_TOKEN must be at least 16 characters long');
  t.equal(configError({ LDBOX_ADMIN_TOKEN: 'has space 0123456789' }), 'LDBOX_ADMIN_TOKEN must not contain whitespace');
  t.equal(configError({ LDBOX_GATEWAY_PORT: 'abc' }), 'LDBOX_GATEWAY_PORT must be a whole number from 0 to 65535, got "abc"');
  t.equal(configError({ LDBOX_GATEWAY_PORT: '70000' }), 'LDBOX_GATEWAY_PORT must be from 0 to 65535, got 70000');
  t.equal(configError({ LDBOX_GATEWAY_HOST: 'a b' }), 'LDBOX_GATEWAY_HOST must be a host name or IP address, got "a b"');
  t.equal(configError({ LDBOX_BASE_URL: 'ftp://x' }), 'LDBOX_BASE_URL must be an http or https URL without credentials, query or fragment, got "ftp://x"');
  t.equal(configError({ LDBOX_BASE_URL: 'not a url' }), 'LDBOX_BASE_URL must be an absolute http or https URL, got "not a url"');
  t.equal(configError({ NATS_URL: 'http://x' }), 'NATS_URL must be nats://host:port, tls://host:port or host:port (comma-separated), got "http://x"');
  t.equal(configError({ LDBOX_WEBHOOK_RATE: '-1' }), 'LDBOX_WEBHOOK_RATE must be a whole number from 0 to 100000, got "-1"');
  t.equal(configError({ LDBOX_WEBHOOK_RATE: '100001' }), 'LDBOX_WEBHOOK_RATE must be from 0 to 100000, got 100001');
  t.equal(configError({ LDBOX_MAX_BODY_BYTES: '10' }), 'LDBOX_MAX_BODY_BYTES must be from 1KiB to 64MiB, got "10" (10 bytes)');
  t.equal(configError({ LDBOX_JOBS_MAX_MSGS: '0' }), 'LDBOX_JOBS_MAX_MSGS must be from 1 to 1000000000, got 0');
  t.equal(configError({ LDBOX_JOBS_REPLICAS: '6' }), 'LDBOX_JOBS_REPLICAS must be from 1 to 5, got 6');
  t.equal(configError({ LDBOX_PUBLISH_TIMEOUT_MS: '50' }), 'LDBOX_PUBLISH_TIMEOUT_MS must be from 100 to 60000, got 50');
});

t.test('LDBOX_EXECUTION_RETENTION: a duration with a unit, or hours', async (t) => {
  const retention = (v: string) => loadGatewayConfig({ LDBOX_ADMIN_TOKEN: TOKEN, LDBOX_EXECUTION_RETENTION: v }).executionRetentionMs;
  t.equal(retention('7d'), 7 * 86_400_000);
  t.equal(retention('24h'), 86_400_000);
  t.equal(retention(' 36 '), 36 * 3_600_000, 'plain digits are hours');
  t.equal(retention('90m'), 90 * 60_000);
  t.equal(retention(''), 7 * 86_400_000, 'empty = unset = 7 days');
  const bad = 'LDBOX_EXECUTION_RETENTION must be a duration: a whole number with a unit (7d, 24h, 90m) or a number of hours, got';
  t.equal(configError({ LDBOX_EXECUTION_RETENTION: 'a week' }), `${bad} "a week"`);
  t.equal(configError({ LDBOX_EXECUTION_RETENTION: '1w' }), `${bad} "1w"`);
  t.equal(configError({ LDBOX_EXECUTION_RETENTION: '1.5d' }), `${bad} "1.5d"`);
  t.equal(configError({ LDBOX_EXECUTION_RETENTION: '-1' }), `${bad} "-1"`);
  t.equal(configError({ LDBOX_EXECUTION_RETENTION: '0' }), 'LDBOX_EXECUTION_RETENTION must be from 1h to 3650d, got "0"');
  t.equal(configError({ LDBOX_EXECUTION_RETENTION: '30m' }), 'LDBOX_EXECUTION_RETENTION must be from 1h to 3650d, got "30m"');
  t.equal(configError({ LDBOX_EXECUTION_RETENTION: '3651d' }), 'LDBOX_EXECUTION_RETENTION must be from 1h to 3650d, got "3651d"');
});
