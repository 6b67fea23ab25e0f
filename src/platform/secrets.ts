// Generated secrets (API key tokens, admin token, gateway passwords) and how they are stored.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A high-entropy token: prefix + 32 random bytes, base64url. */
export function newToken(prefix: string): string {
  return `${prefix}${randomBytes(32).toString('base64url')}`;
}

/**
 * SHA-256 is the right hash for these: the tokens carry 256 bits of randomness, so a slow password hash
 * would add cost on every request and no protection.
 */
export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export function sameHash(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && timingSafeEqual(left, right);
}
