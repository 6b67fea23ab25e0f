// UHPPOTE card numbers (src/modules/controllers/uhppote/card-number.ts): Wiegand-26 is facility × 100000 +
// card (uhppote-core put_card.go isWiegand26); other credentials have no documented number.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseCredential } from '../../src/modules/access/credentials.ts';
import { cardNumberOf, credentialsForCardNumber } from '../../src/modules/controllers/uhppote/card-number.ts';

test('a Wiegand-26 credential is facility × 100000 + card', () => {
  assert.equal(cardNumberOf('wiegand26:100:58400'), 10058400);
  assert.equal(cardNumberOf('wiegand26:0:1'), 1);
  assert.equal(cardNumberOf('wiegand26:255:65535'), 25565535);
  assert.equal(cardNumberOf('wiegand26:12:34567'), 1234567);
});

test('what a controller cannot hold, or that is not in normal form, is null', () => {
  for (const credential of [
    'wiegand26:256:1',
    'wiegand26:1:65536',
    'wiegand26:01:5',
    'wiegand26:1',
    'w26:1:2',
    'wiegand34:100:58400',
    'uid:04a1b2c3',
    'uid:04a1b2c3d4e5f6',
    `phone:${'ab'.repeat(16)}`,
    '',
  ]) {
    assert.equal(cardNumberOf(credential), null, credential);
  }
});

test('a reported number maps back to the one Wiegand-26 credential it can be', () => {
  assert.deepEqual(credentialsForCardNumber(10058400), ['wiegand26:100:58400']);
  assert.deepEqual(credentialsForCardNumber(1), ['wiegand26:0:1']);
  assert.deepEqual(credentialsForCardNumber(25565535), ['wiegand26:255:65535']);
  assert.deepEqual(credentialsForCardNumber(10065536), []); // card part past 16 bits
  assert.deepEqual(credentialsForCardNumber(25600000), []); // facility past 8 bits
  assert.deepEqual(credentialsForCardNumber(388575490), []); // the Wiegand-34 report of uhppote-core #15
  assert.deepEqual(credentialsForCardNumber(0xffffffff), []);
  assert.deepEqual(credentialsForCardNumber(-1), []);
});

test('round trip over every facility and a spread of cards, in the form parseCredential gives', () => {
  for (let facility = 0; facility <= 255; facility++) {
    for (const card of [0, 1, 9999, 10000, 58400, 65535]) {
      const parsed = parseCredential(`w26:${facility}:${card}`);
      assert.ok('credential' in parsed);
      const n = cardNumberOf(parsed.credential);
      assert.ok(n !== null);
      assert.deepEqual(credentialsForCardNumber(n), [parsed.credential]);
    }
  }
});
