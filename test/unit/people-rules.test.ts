// The pure rules of people (README: API notes, "People: phone" and "People: reserved names").
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { emailKey, isReservedName, normalisePhone } from '../../src/modules/people/rules.ts';

describe('canonical phones', () => {
  test('an international number is stored in E.164, whatever spacing, dashes, dots and brackets it came with', () => {
    for (const spelling of ['+44 20 7946 0958', '+442079460958', '+44-20-7946-0958', '+44.20.7946.0958', '+44 (20) 7946 0958', '  +44 20 7946 0958  ']) {
      assert.equal(normalisePhone(spelling), '+442079460958', spelling);
    }
    assert.equal(normalisePhone('+1 (202) 555-0123'), '+12025550123');
    assert.equal(normalisePhone('+49 30 901820'), '+4930901820');
  });

  test("the UK's national (0) is dropped, as E.164 has no trunk prefix", () => {
    assert.equal(normalisePhone('+44 (0) 20 7946 0958'), '+442079460958');
  });

  test('a number without + and its country code is not international: null', () => {
    for (const spelling of ['020 7946 0958', '0044 20 7946 0958', '44 20 7946 0958', '2025550123']) {
      assert.equal(normalisePhone(spelling), null, spelling);
    }
  });

  test('a number inside other text is not a phone, even when the text holds a valid one', () => {
    for (const spelling of ['call +44 20 7946 0958', 'tel:+44-20-7946-0958', 'x+44 20 7946 0958', '+44 20 7946 0958 ext 2', '+44 20 7946 0958 call me', '+44 20 7946 0958;ext=2']) {
      assert.equal(normalisePhone(spelling), null, spelling);
    }
  });

  test('what is not a valid number is null, never an exception', () => {
    for (const spelling of ['', '+', '+ ', '+44', '+44 20 7946 095', '+999 12345678', '+1 202 555 01234 5678', '+44 twenty', 'not a phone']) {
      assert.equal(normalisePhone(spelling), null, JSON.stringify(spelling));
    }
  });
});

describe('reserved names', () => {
  const reserved = (name: string, brand = 'Latchkey') => isReservedName(name, brand);

  test('Admin, ServiceUser and the brand name are refused as the whole name, in any case', () => {
    for (const name of ['Admin', 'admin', 'ADMIN', '  Admin  ', 'ServiceUser', 'serviceuser', 'Latchkey', 'LATCHKEY']) {
      assert.equal(reserved(name), true, name);
    }
  });

  test('and as the first word, split at spaces and punctuation', () => {
    for (const name of ['admin smith', 'Admin, Jr.', 'admin.smith', 'Latchkey Support', 'serviceuser: backup', 'ADMIN!']) {
      assert.equal(reserved(name), true, name);
    }
  });

  test('a longer word, a later word or a split name is not reserved', () => {
    for (const name of ['Administrator', 'Adminah Cole', 'Ada Admin', 'Service User', 'Latchkeys', 'Joe Latchkey', 'Ad min']) {
      assert.equal(reserved(name), false, name);
    }
  });

  test('look-alikes are compared as what they look like: compatibility forms, invisible characters, Cyrillic and Greek letters', () => {
    for (const name of [
      'Admin\u200b', // zero-width space
      '\u200bAdmin',
      'Ad\u00admin', // soft hyphen
      'Ad\u200dmin smith', // zero-width joiner inside the first word
      'A\u2060dmin', // word joiner
      '\ufeffAdmin',
      'Admin\ufe0f', // variation selector
      '\uff21dmin', // fullwidth A
      '\uff21\uff44\uff4d\uff49\uff4e', // all fullwidth
      '\u{1d400}dmin', // mathematical bold A
      'Admin\u00a0Smith', // no-break space between the words
      '\u0410dmin', // Cyrillic A
      'Adm\u0456n', // Cyrillic i
      'ADM\u0399N', // Greek capital iota
      'S\u0435rviceUser', // Cyrillic e
      'L\u0430tchkey Support', // Cyrillic a in the brand
    ]) {
      assert.equal(reserved(name), true, JSON.stringify(name));
    }
    assert.equal(reserved('\uff21cme', 'Acme'), true, 'the configured brand too');
  });

  test('names in other scripts, and accented names, stay allowed', () => {
    for (const name of ['\u00c1dmin', 'Adm\u00efn', '\u0410\u043d\u043d\u0430 \u041f\u0435\u0442\u0440\u043e\u0432\u0430', '\u0391\u03bb\u03ad\u03be\u03b7\u03c2', '\u674e\u96f7']) {
      assert.equal(reserved(name), false, JSON.stringify(name));
    }
  });

  test('the brand is the configured one (BRAND_NAME), not always Latchkey', () => {
    assert.equal(reserved('Acme Security', 'Acme'), true);
    assert.equal(reserved('acme', 'Acme'), true);
    assert.equal(reserved('Latchkey', 'Acme'), false);
    assert.equal(reserved('Admin', 'Acme'), true, 'the fixed names stay reserved');
  });
});

describe('emailKey', () => {
  test('lower-cases ASCII letters and nothing else', () => {
    assert.equal(emailKey('Ann.Lee+X@Example.COM'), 'ann.lee+x@example.com');
    assert.equal(emailKey('İNCI@x.org'), 'İnci@x.org');
    assert.equal(emailKey('\u212Aate@x.org'), '\u212Aate@x.org');
  });
});
