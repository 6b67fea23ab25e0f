// Secrets the service needs in clear later (webhook signing secrets) are kept encrypted at rest with
// AES-256-GCM under a server key: WEBHOOK_SECRET_KEY, or one generated once and kept in the data store.
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import type { Database } from './db/index.ts';

export class SecretBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('the secret key must be 32 bytes');
  }

  static async open(db: Database, configured: string | null): Promise<SecretBox> {
    if (configured) return new SecretBox(Buffer.from(configured, 'base64'));
    const generated = randomBytes(32).toString('base64');
    await db.query(`INSERT INTO settings (key, value) VALUES ('webhook_secret_key', $1) ON CONFLICT (key) DO NOTHING`, [generated]);
    const [row] = await db.query<{ value: string }>(`SELECT value FROM settings WHERE key = 'webhook_secret_key'`);
    return new SecretBox(Buffer.from((row as { value: string }).value, 'base64'));
  }

  /** A key of its own for one purpose (e.g. the HMAC that finds a credential), derived from the server key. */
  derive(purpose: string): string {
    return createHmac('sha256', this.key).update(purpose).digest('base64url');
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return [iv, cipher.getAuthTag(), body].map((b) => b.toString('base64url')).join('.');
  }

  open(sealed: string): string {
    const [iv, tag, body] = sealed.split('.').map((part) => Buffer.from(part, 'base64url'));
    if (!iv || !tag || !body) throw new Error('malformed sealed secret');
    const decipher = createDecipheriv('aes-256-gcm', this.key, iv);
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
  }
}
