// The texts of setup-link messages, in both languages, with and without doors to name.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { invitationTemplate, type InvitationText } from '../../src/modules/notifications/templates.ts';

const base: InvitationText = { brand: 'Latchkey', personName: 'Ada', opens: [], link: 'https://x.test/activate/t', expiresAt: new Date('2027-01-31T00:00:00Z') };

for (const language of ['en', 'de']) {
  test(`${language}: a key issued without security groups says its doors come later, never an empty list`, () => {
    const template = invitationTemplate(language);
    for (const text of [template.sms(base), template.email(base)]) {
      assert.match(text, language === 'en' ? /will be added later/ : /werden später hinzugefügt/);
      assert.doesNotMatch(text, /(for|für) {2}|(opens|öffnet) \./);
      assert.ok(text.includes(base.link));
    }
  });

  test(`${language}: a key with doors names them`, () => {
    const template = invitationTemplate(language);
    const text = { ...base, opens: ['Front door', 'Lab'] };
    for (const message of [template.sms(text), template.email(text)]) assert.match(message, /Front door (and|und) Lab/);
  });
}
