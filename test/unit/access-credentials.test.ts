// Credentials at the door (issue 22, "What a key is at the door"): every spelling an operator types or a
// reader presents comes to one normal form, anything else is refused with the accepted forms, and the
// digests that stand for a credential reveal nothing without their secret.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { credentialDigest, gatewayAccessSecret, newPhoneCredential, parseCredential } from '../../src/modules/access/credentials.ts';

const normal = (input: string): string => {
  const parsed = parseCredential(input);
  assert.ok('credential' in parsed, `${JSON.stringify(input)}: ${'error' in parsed ? parsed.error : ''}`);
  return parsed.credential;
};
const refusal = (input: string): string => {
  const parsed = parseCredential(input);
  assert.ok('error' in parsed, `${JSON.stringify(input)} was accepted as ${'credential' in parsed ? parsed.credential : ''}`);
  return parsed.error;
};

describe('accepted forms and their normal form', () => {
  test('Wiegand 26: any case, short prefix, spaces and leading zeros', () => {
    for (const input of ['wiegand26:12:345', 'Wiegand26:12:345', 'WIEGAND26:012:00345', 'w26:12:345', 'W26:12:345', '  w26 : 12 : 345  ']) {
      assert.equal(normal(input), 'wiegand26:12:345', input);
    }
    assert.equal(normal('wiegand26:0:0'), 'wiegand26:0:0');
    assert.equal(normal('w26:000:00000'), 'wiegand26:0:0');
    assert.equal(normal('wiegand26:255:65535'), 'wiegand26:255:65535');
  });

  test('Wiegand 34: a 16-bit facility code', () => {
    assert.equal(normal('wiegand34:65535:65535'), 'wiegand34:65535:65535');
    assert.equal(normal('W34:1000:7'), 'wiegand34:1000:7');
    assert.equal(normal('w34:0256:01'), 'wiegand34:256:1');
  });

  test('raw UID: lowercase hex, with or without byte separators', () => {
    for (const input of ['uid:04a1b2c3', 'UID:04A1B2C3', 'uid:04:A1:B2:C3', 'uid:04 a1 b2 c3', 'uid:04-a1-b2-c3', ' uid: 04  a1 b2 c3 ', 'uid:0x04A1B2C3']) {
      assert.equal(normal(input), 'uid:04a1b2c3', input);
    }
    assert.equal(normal('uid:04a1b2c3d4e5f6'), 'uid:04a1b2c3d4e5f6', '7 bytes');
    assert.equal(normal('uid:00112233445566778899'), 'uid:00112233445566778899', '10 bytes');
  });

  test('phone: 32 hex digits, lowercased', () => {
    assert.equal(normal('PHONE:0123456789ABCDEF0123456789ABCDEF'), 'phone:0123456789abcdef0123456789abcdef');
  });

  test('a normal form is its own normal form', () => {
    for (const input of ['wiegand26:1:2', 'wiegand34:3:4', 'uid:0011223344', 'phone:ffffffffffffffffffffffffffffffff']) {
      assert.equal(normal(input), input);
      assert.equal(normal(normal(` ${input.toUpperCase()} `)), input);
    }
  });
});

describe('refusals', () => {
  test('facility or card out of range', () => {
    assert.match(refusal('wiegand26:256:1'), /facility code of wiegand26 is a decimal from 0 to 255/);
    assert.match(refusal('wiegand26:1:65536'), /card number of wiegand26 is a decimal from 0 to 65535/);
    assert.match(refusal('wiegand34:65536:1'), /0 to 65535/);
    assert.match(refusal('wiegand34:1:99999999999'), /card number/);
    for (const input of ['wiegand26:-1:5', 'wiegand26:1.5:5', 'wiegand26:1e2:5', 'wiegand26:0x10:5', 'wiegand26:١:5', 'wiegand26::5', 'wiegand26:1:']) {
      refusal(input);
    }
  });

  test('the wrong number of parts', () => {
    assert.match(refusal('wiegand26:12'), /wiegand26:<facility>:<card>/);
    assert.match(refusal('w34:1:2:3'), /wiegand34:<facility>:<card>/);
  });

  test('odd hex, too short or too long a UID, groups that are not bytes', () => {
    for (const input of ['uid:04a1b2c', 'uid:04a1b2', 'uid:0011223344556677889900', 'uid:04a:1b2', 'uid:04:a1:b2:c', 'uid:04a1b2g3', 'uid:', 'uid:4:a1:b2:c3']) {
      assert.match(refusal(input), /4 to 10 bytes in hex/, input);
    }
  });

  test('a phone credential of another length', () => {
    assert.match(refusal('phone:0123'), /32 hex digits/);
    assert.match(refusal(`phone:${'a'.repeat(34)}`), /32 hex digits/);
  });

  test('an unknown prefix, no prefix, or nothing: the message names the accepted forms', () => {
    for (const input of ['12345', '', '   ', 'mifare:04a1b2c3', 'w27:1:2', 'wiegand:1:2', ':12:345', 'card 12 345']) {
      const message = refusal(input);
      for (const form of ['wiegand26:<facility 0–255>:<card 0–65535>', 'wiegand34:<facility 0–65535>:<card 0–65535>', 'uid:', 'phone:']) {
        assert.ok(message.includes(form), `${JSON.stringify(input)}: ${message}`);
      }
    }
  });

  test('more than 100 characters, before any trimming', () => {
    assert.match(refusal(`uid:04a1b2c3${' '.repeat(100)}`), /at most 100 characters/);
    normal(`uid:04a1b2c3${' '.repeat(88)}`);
  });
});

describe('digests and secrets', () => {
  test('a digest is HMAC-SHA256 in base64url, stable, and differs per secret and per credential', () => {
    // Computed with `printf 'wiegand26:12:345' | openssl dgst -sha256 -hmac server-secret -binary | basenc --base64url`.
    assert.equal(credentialDigest('server-secret', 'wiegand26:12:345'), 'N971afXd3fsHmq1bR0fnowR8bcqANQfOCZEkwkfNeFI');
    assert.equal(credentialDigest('server-secret', 'wiegand26:12:345'), credentialDigest('server-secret', 'wiegand26:12:345'));
    assert.notEqual(credentialDigest('other-secret', 'wiegand26:12:345'), credentialDigest('server-secret', 'wiegand26:12:345'));
    assert.notEqual(credentialDigest('server-secret', 'wiegand26:12:346'), credentialDigest('server-secret', 'wiegand26:12:345'));
    assert.match(credentialDigest('s', 'uid:04a1b2c3'), /^[A-Za-z0-9_-]{43}$/);
  });

  test('a digest takes only a normalised credential and a secret: anything else would match nothing, silently', () => {
    assert.throws(() => credentialDigest('s', 'W26:012:345'), /normalised/);
    assert.throws(() => credentialDigest('s', 'uid:04A1B2C3'), /normalised/);
    assert.throws(() => credentialDigest('', 'uid:04a1b2c3'), /secret/);
  });

  test("a gateway's list secret is HMAC-SHA256(password, 'latchkey access list v1'), base64url", () => {
    // `printf 'latchkey access list v1' | openssl dgst -sha256 -hmac mqtt-password -binary | basenc --base64url`
    assert.equal(gatewayAccessSecret('mqtt-password'), 'PRfAQIYtTm_ws-Sha-d6mfuqeetxxEPwvIp1JALs_6k');
    assert.notEqual(gatewayAccessSecret('mqtt-password-2'), gatewayAccessSecret('mqtt-password'));
    const listed = credentialDigest(gatewayAccessSecret('gw-a'), 'uid:04a1b2c3');
    assert.notEqual(listed, credentialDigest(gatewayAccessSecret('gw-b'), 'uid:04a1b2c3'), "another gateway's list does not match");
    assert.throws(() => gatewayAccessSecret(''), /password/);
  });

  test('a phone credential is phone: and 16 random bytes in lowercase hex, its own normal form', () => {
    const credential = newPhoneCredential();
    assert.match(credential, /^phone:[0-9a-f]{32}$/);
    assert.equal(normal(credential), credential);
    assert.notEqual(newPhoneCredential(), credential);
  });
});
