// Generated tokens, their stored hashes, and the box that keeps webhook secrets encrypted at rest
// (README: Security).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { API_KEY_TOKEN_PREFIX } from '../../src/platform/auth.ts';
import { SecretBox } from '../../src/platform/secret-box.ts';
import { hashToken, newToken, sameHash } from '../../src/platform/secrets.ts';

describe('tokens and their hashes', () => {
  test('a token is its prefix and 32 random bytes in base64url, never the same twice', () => {
    const token = newToken(API_KEY_TOKEN_PREFIX);
    assert.match(token, /^lk_[A-Za-z0-9_-]{43}$/);
    assert.equal(Buffer.from(token.slice(3), 'base64url').length, 32);
    assert.notEqual(newToken('lk_'), newToken('lk_'));
  });

  test('the stored form is the SHA-256 hex digest', () => {
    assert.equal(hashToken('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    assert.equal(hashToken(''), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  test('hashes compare equal only when they are', () => {
    const hash = hashToken('lk_one');
    assert.equal(sameHash(hash, hashToken('lk_one')), true);
    assert.equal(sameHash(hash, hashToken('lk_two')), false);
    assert.equal(sameHash(hash, hash.slice(0, 62)), false, 'a shorter hash, without throwing');
    assert.equal(sameHash(hash, ''), false);
  });
});

describe('the secret box', () => {
  const key = randomBytes(32);

  test('opens what it sealed, with a fresh IV each time', () => {
    const box = new SecretBox(key);
    const secret = 'whsec_ünïcode and spaces';
    const sealed = box.seal(secret);
    assert.equal(box.open(sealed), secret);
    assert.notEqual(box.seal(secret), sealed);
    assert.ok(!sealed.includes('whsec'), 'no clear text');
    assert.equal(sealed.split('.').length, 3, 'iv.tag.body');
  });

  test('refuses what another key sealed, and anything altered', () => {
    const sealed = new SecretBox(key).seal('secret');
    assert.throws(() => new SecretBox(randomBytes(32)).open(sealed));
    const [iv, tag, body] = sealed.split('.') as [string, string, string];
    const flipped = Buffer.from(body, 'base64url');
    flipped[0] = (flipped[0] as number) ^ 1;
    assert.throws(() => new SecretBox(key).open([iv, tag, flipped.toString('base64url')].join('.')));
    assert.throws(() => new SecretBox(key).open(`${iv}.${tag}`), /malformed/);
  });

  test('takes only a 32-byte key', () => {
    assert.throws(() => new SecretBox(randomBytes(16)), /32 bytes/);
    assert.throws(() => new SecretBox(Buffer.alloc(0)), /32 bytes/);
  });
});
