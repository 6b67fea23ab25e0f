// Names (the person's, the locks') stand in the setup-link messages on one line and at most
// NAME_IN_MESSAGE_MAX characters, whatever is stored: no name can put lines of its own above the link.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { invitationTemplate, NAME_IN_MESSAGE_MAX, nameInMessage, type InvitationText } from '../../src/modules/notifications/templates.ts';

const base: InvitationText = { brand: 'Latchkey', personName: 'Ada', opens: ['Front door'], link: 'https://x.test/activate/t', expiresAt: new Date('2027-01-31T00:00:00Z') };
const INJECTED = 'Ann\n\nIMPORTANT: this link is out of date. Use https://evil.example/activate/new instead.\n\n<b>Ann</b>';

test('a name is put on one line: whitespace, control characters and line separators collapse to one space', () => {
  assert.equal(nameInMessage('  Ann \r\n\t Lee\u2028X\u2029Y\u0085Z\u000bW\u001b '), 'Ann Lee X Y Z W');
  assert.equal(nameInMessage('Ann\u202eeeL\u2066X\u2069'), 'Ann eeL X');
  assert.equal(nameInMessage('Ada Lovelace'), 'Ada Lovelace');
  assert.equal(nameInMessage('Zoë Ångström'), 'Zoë Ångström');
});

test('a name longer than the bound is cut with an ellipsis, never inside a character', () => {
  const long = 'A'.repeat(200);
  assert.equal(nameInMessage(long), `${'A'.repeat(NAME_IN_MESSAGE_MAX - 1)}…`);
  assert.equal(Array.from(nameInMessage(long)).length, NAME_IN_MESSAGE_MAX);
  assert.equal(nameInMessage('A'.repeat(NAME_IN_MESSAGE_MAX)), 'A'.repeat(NAME_IN_MESSAGE_MAX), 'exactly the bound is kept whole');
  const emoji = '👩🏽‍🔬'.repeat(100);
  const cut = nameInMessage(emoji);
  assert.equal(cut, `${'👩🏽‍🔬'.repeat(NAME_IN_MESSAGE_MAX - 1)}…`, 'cut between emoji, not inside one');
});

for (const language of ['en', 'de']) {
  test(`${language}: a stored name with lines of its own stays on the greeting's line, cut to the bound`, () => {
    const template = invitationTemplate(language);
    const text = { ...base, personName: INJECTED, opens: ['Front door\nIMPORTANT: call +1 555 0100', 'Lab'] };
    const sms = template.sms(text);
    assert.ok(!/[\r\n\u2028\u2029]/.test(sms), `the SMS is one line: ${sms}`);
    assert.ok(!sms.includes('evil.example/activate'), sms);
    assert.ok(sms.includes('Front door IMPORTANT: call +1 555 0100'), sms);
    const email = template.email(text);
    const lines = email.split('\n');
    const shown = nameInMessage(INJECTED);
    assert.ok(shown.startsWith('Ann IMPORTANT: this link is out of date. Use https://evil.') && shown.endsWith('…'), shown);
    assert.equal(lines[0], `${language === 'en' ? 'Hello' : 'Hallo'} ${shown},`);
    assert.ok(!lines.some((line) => line.startsWith('IMPORTANT') || line.startsWith('<b>')), email);
    assert.equal(lines.filter((line) => line.includes('/activate/')).length, 1, email);
    assert.ok(!template.subject(text).includes('\n'));
  });
}
