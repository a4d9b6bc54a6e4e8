/**
 * Signs a webhook call the way each platform documents it (GitHub, Stripe, Standard Webhooks, Shopify,
 * Slack), with node:crypto, independently of the gateway's code: the headers a real sender would send.
 */
import { createHmac } from 'node:crypto';

export type Preset = 'GITHUB' | 'STRIPE' | 'STANDARD_WEBHOOKS' | 'SHOPIFY' | 'SLACK';

/** The headers that sign `body` (sent as these exact bytes) at Unix time `ts`. */
export function signedHeaders(preset: Preset, secret: string, body: string, ts = Math.floor(Date.now() / 1000), id = 'msg_2Lq'): Record<string, string> {
  const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data, 'utf8').digest();
  switch (preset) {
    case 'GITHUB':
      return { 'x-hub-signature-256': `sha256=${hmac(secret, body).toString('hex')}` };
    case 'SHOPIFY':
      return { 'x-shopify-hmac-sha256': hmac(secret, body).toString('base64') };
    case 'STRIPE':
      return { 'stripe-signature': `t=${ts},v1=${hmac(secret, `${ts}.${body}`).toString('hex')}` };
    case 'SLACK':
      return { 'x-slack-signature': `v0=${hmac(secret, `v0:${ts}:${body}`).toString('hex')}`, 'x-slack-request-timestamp': String(ts) };
    case 'STANDARD_WEBHOOKS': {
      const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
      return { 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': `v1,${hmac(key, `${id}.${ts}.${body}`).toString('base64')}` };
    }
  }
}
