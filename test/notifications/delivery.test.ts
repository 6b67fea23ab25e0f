// Real delivery adapters: e-mail to a local SMTP server and SMS to a local HTTP provider, both started
// here; messages are queued with the invitation and sent after commit, with retries.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { SMTPServer } from 'smtp-server';
import { LINK_REMOVED, MESSAGE_WORK } from '../../src/modules/notifications/index.ts';
import type { Clock } from '../../src/platform/clock.ts';
import { migrate } from '../../src/platform/db/migrate.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';
import { issueKey, keysTenant, linkPath, type KeysTenant } from '../helpers/keys.ts';
import { startService, type TestService } from '../helpers/service.ts';

let database: TestDatabase;
let service: TestService;
let smtp: SMTPServer;
let sms: Server;
const mails: Array<{ to: string; raw: string }> = [];
const texts: Array<{ body: Record<string, string>; authorization: string | undefined }> = [];
let smsStatus = 200;
let smtpRefusesRecipients = false;
const logLines: string[] = [];
// The service clock of this file: system time plus an offset the retry test moves.
let offsetMs = 0;
const clock: Clock = { now: () => new Date(Date.now() + offsetMs) };

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let data = '';
    request.on('data', (chunk: Buffer) => (data += chunk.toString()));
    request.on('end', () => resolve(data));
  });
}

async function waitFor<T>(read: () => Promise<T | undefined> | T | undefined, what: string): Promise<T> {
  for (let i = 0; i < 100; i++) {
    const value = await read();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Each stored message of an invitation, the whole row as text: a token in any column shows in it. */
async function messageRows(invitationId: number, db = database.db): Promise<Array<{ status: string; text: string }>> {
  return db.query('SELECT status, row_to_json(m)::text AS text FROM outbound_messages m WHERE invitation_id = $1 ORDER BY id', [invitationId]);
}

const SETUP_LINK = /https:\/\/doors\.example\.com\/activate\/([A-Za-z0-9_-]{43})/;

function tokenIn(text: string): string {
  const token = SETUP_LINK.exec(text)?.[1];
  assert.ok(token, `no setup link in ${text}`);
  return token;
}

/** The sealed copy of what a message will send, kept only while it waits. */
function sealedContent(row: { text: string }): string | null {
  return (JSON.parse(row.text) as { sealed_content: string | null }).sealed_content;
}

function smsTo(phone: string) {
  return texts.filter((t) => t.body.to === phone);
}

before(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onRcptTo(address, _session, callback) {
      if (!smtpRefusesRecipients) return callback();
      const refusal = Object.assign(new Error(`<${address.address}>: Recipient address rejected`), { responseCode: 550 });
      callback(refusal);
    },
    onData(stream, session, callback) {
      let raw = '';
      stream.on('data', (chunk: Buffer) => (raw += chunk.toString()));
      stream.on('end', () => {
        // Undo quoted-printable soft line breaks so the link reads as one line.
        for (const rcpt of session.envelope.rcptTo) mails.push({ to: rcpt.address, raw: raw.replace(/=\r\n/g, '') });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  sms = createServer((request, response) => {
    void readBody(request).then((body) => {
      if (smsStatus === 200) texts.push({ body: JSON.parse(body) as Record<string, string>, authorization: request.headers.authorization });
      response.writeHead(smsStatus, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => sms.listen(0, '127.0.0.1', resolve));

  database = await createTestDatabase();
  const smtpPort = (smtp.server.address() as AddressInfo).port;
  const smsPort = (sms.address() as AddressInfo).port;
  service = await startService(
    database.db,
    {
      SANDBOX: 'false',
      SMTP_URL: `smtp://127.0.0.1:${smtpPort}`,
      SMTP_FROM: 'Latchkey <keys@latchkey.test>',
      SMS_URL: `http://127.0.0.1:${smsPort}/messages`,
      SMS_TOKEN: 'sms-secret',
      SMS_FROM: 'Latchkey',
      PUBLIC_URL: 'https://doors.example.com',
    },
    clock,
    { level: 'info', stream: { write: (line: string) => logLines.push(line) } },
  );
});

after(async () => {
  await service?.close();
  await database?.close();
  await new Promise<void>((resolve) => (smtp ? smtp.close(() => resolve()) : resolve()));
  await new Promise<void>((resolve) => (sms ? sms.close(() => resolve()) : resolve()));
});

describe('delivery adapters', () => {
  let tenant: KeysTenant;
  before(async () => {
    tenant = await keysTenant(service);
  });

  test('e-mail goes over SMTP and SMS as a JSON POST with the bearer credential, each with the setup link', async () => {
    const res = await issueKey(service, tenant, { channel: 'both' });
    assert.equal(res.status, 202);
    const mail = await waitFor(() => mails.find((m) => m.to === tenant.email), 'the e-mail');
    assert.match(mail.raw, /Subject: Latchkey: your phone key/);
    assert.match(mail.raw, /From: Latchkey <keys@latchkey\.test>/);
    assert.match(mail.raw, /https:\/\/doors\.example\.com\/activate\/[A-Za-z0-9_-]{43}/);
    const text = await waitFor(() => texts.find((t) => t.body.to === tenant.phone), 'the SMS');
    assert.equal(text.authorization, 'Bearer sms-secret');
    assert.equal(text.body.from, 'Latchkey');
    assert.match(text.body.text ?? '', /https:\/\/doors\.example\.com\/activate\//);
    const sent = await waitFor(async () => {
      const [row] = await database.db.query<{ sent_sms_at: Date | null; sent_email_at: Date | null }>(
        'SELECT sent_sms_at, sent_email_at FROM invitations WHERE id = $1',
        [res.body.invitation_id],
      );
      return row?.sent_sms_at && row.sent_email_at ? row : undefined;
    }, 'the sent times');
    assert.ok(sent);
    // Setup-link tokens are kept only hashed: once sent, no column of the messages holds the token.
    const token = tokenIn(mail.raw);
    assert.equal(tokenIn(text.body.text ?? ''), token);
    const rows = await messageRows(res.body.invitation_id);
    assert.deepEqual(
      rows.map((r) => r.status),
      ['sent', 'sent'],
    );
    for (const row of rows) {
      assert.ok(!row.text.includes(token), `the token is gone: ${row.text}`);
      assert.equal(sealedContent(row), null, 'not even sealed');
      assert.ok(row.text.includes(LINK_REMOVED), 'the readable body says where the link was');
    }
  });

  test('a message waiting for a retry keeps its link only sealed; the retry sends the link, which works, and then drops it', async () => {
    const t = await keysTenant(service);
    smsStatus = 503;
    const res = await issueKey(service, t, { channel: 'sms' });
    assert.equal(res.status, 202);
    const waiting = await waitFor(async () => {
      const [row] = await messageRows(res.body.invitation_id);
      return row?.text.includes('503') ? row : undefined;
    }, 'a failed attempt');
    assert.equal(waiting.status, 'pending');
    assert.doesNotMatch(waiting.text, /\/activate\//, 'no link in clear while the message waits');
    assert.ok(sealedContent(waiting), 'the message waits sealed');

    smsStatus = 200;
    offsetMs += 61_000;
    await service.latchkey.jobs.runUntilIdle();
    const [sms] = smsTo(t.phone);
    const token = tokenIn(sms?.body.text ?? '');
    const [sent] = await messageRows(res.body.invitation_id);
    assert.equal(sent?.status, 'sent');
    assert.ok(!sent.text.includes(token), `the token is gone: ${sent.text}`);
    assert.equal(sealedContent(sent), null);
    const activated = await service.request('POST', linkPath(`https://doors.example.com/activate/${token}`), { headers: { accept: 'application/json' } });
    assert.equal(activated.status, 200, activated.text);
  });

  test('a message that finally fails drops its link', async () => {
    const t = await keysTenant(service);
    smsStatus = 503;
    try {
      const res = await issueKey(service, t, { channel: 'sms' });
      await waitFor(async () => {
        const [row] = await messageRows(res.body.invitation_id);
        return row?.text.includes('503') ? row : undefined;
      }, 'the first failed attempt');
      for (const seconds of MESSAGE_WORK.ladderSeconds) {
        offsetMs += (seconds + 1) * 1000;
        await service.latchkey.jobs.runUntilIdle();
      }
      const [row] = await messageRows(res.body.invitation_id);
      assert.equal(row?.status, 'failed');
      assert.doesNotMatch(row.text, /\/activate\//);
      const stored = JSON.parse(row.text) as { link: string | null; attempts: number };
      assert.deepEqual([sealedContent(row), stored.link, stored.attempts], [null, null, MESSAGE_WORK.ladderSeconds.length + 1]);
    } finally {
      smsStatus = 200;
    }
  });

  test('a resend withdraws the messages still waiting with the old link; a cancel or the person\'s deletion withdraws them too', async () => {
    const t = await keysTenant(service);
    smsStatus = 503;
    const res = await issueKey(service, t, { channel: 'sms' });
    await waitFor(async () => {
      const [row] = await messageRows(res.body.invitation_id);
      return row?.text.includes('503') ? row : undefined;
    }, 'a failed attempt');
    smsStatus = 200;
    const resent = await service.request('POST', `/v1/invitations/${res.body.invitation_id}/resend`, { token: t.token, body: { channel: 'sms' } });
    assert.equal(resent.status, 202, resent.text);
    await waitFor(() => (smsTo(t.phone).length > 0 ? true : undefined), 'the new SMS');
    offsetMs += 61_000; // the old message's retry would be due now
    await service.latchkey.jobs.runUntilIdle();
    assert.equal(smsTo(t.phone).length, 1, 'only the new link was sent');
    const rows = await messageRows(res.body.invitation_id);
    assert.deepEqual(
      rows.map((r) => r.status),
      ['withdrawn', 'sent'],
    );
    for (const row of rows) assert.doesNotMatch(row.text, /\/activate\//);

    smsStatus = 503;
    try {
      const other = await issueKey(service, t, { channel: 'sms' });
      await waitFor(async () => {
        const [row] = await messageRows(other.body.invitation_id);
        return row?.text.includes('503') ? row : undefined;
      }, 'a failed attempt');
      assert.equal((await service.request('DELETE', `/v1/invitations/${other.body.invitation_id}`, { token: t.token })).status, 204);
      smsStatus = 200;
      offsetMs += 61_000;
      await service.latchkey.jobs.runUntilIdle();
      assert.equal(smsTo(t.phone).length, 1, 'the cancelled link was not sent');
      const [row] = await messageRows(other.body.invitation_id);
      assert.equal(row?.status, 'withdrawn');
      assert.doesNotMatch(row.text, /\/activate\//);

      // Deleting the person cancels their invitations, and so withdraws their waiting messages.
      smsStatus = 503;
      const last = await issueKey(service, t, { channel: 'sms' });
      await waitFor(async () => {
        const [waiting] = await messageRows(last.body.invitation_id);
        return waiting?.text.includes('503') ? waiting : undefined;
      }, 'a failed attempt');
      assert.equal((await service.request('DELETE', `/v1/people/${t.personId}`, { token: t.token })).status, 204);
      const [gone] = await messageRows(last.body.invitation_id);
      assert.equal(gone?.status, 'withdrawn');
      assert.doesNotMatch(gone.text, /\/activate\//);
    } finally {
      smsStatus = 200;
    }
  });

  test('migration 009 drops the links of messages already sent or failed; one still waiting is sent with its link, then dropped', async () => {
    const legacy = await createTestDatabase({ migrateBefore: '009' });
    let legacyService: Awaited<ReturnType<typeof startService>> | undefined;
    try {
      const [account] = await legacy.db.query<{ id: number }>(`INSERT INTO accounts (name, created_at) VALUES ('Old', now()) RETURNING id`);
      const link = (name: string) => `https://doors.example.com/activate/${name.padEnd(43, 'x')}`;
      const phone = '+442079469999';
      for (const [status, name] of [
        ['sent', 'legacySent'],
        ['failed', 'legacyFailed'],
        ['pending', 'legacyPending'],
      ] as const) {
        await legacy.db.query(
          `INSERT INTO outbound_messages (account_id, channel, to_address, subject, body, link, status, next_attempt_at, created_at)
           VALUES ($1, 'sms', $2, 'Your key', $3, $4, $5, $6, $6)`,
          [account?.id, phone, `Activate it: ${link(name)} (${status})`, link(name), status, new Date(clock.now().getTime() - 1000)],
        );
      }
      await migrate(legacy.db);
      const rows = await legacy.db.query<{ status: string; text: string }>(
        'SELECT status, row_to_json(m)::text AS text FROM outbound_messages m ORDER BY id',
      );
      assert.deepEqual(
        rows.map((r) => r.status),
        ['sent', 'failed', 'pending'],
      );
      assert.ok(!rows[0]?.text.includes('legacySent') && rows[0]?.text.includes(`Activate it: ${LINK_REMOVED} (sent)`), rows[0]?.text);
      assert.ok(!rows[1]?.text.includes('legacyFailed') && rows[1]?.text.includes(LINK_REMOVED), rows[1]?.text);
      assert.ok(rows[2]?.text.includes('legacyPending'), 'a waiting message still needs its link');

      legacyService = await startService(
        legacy.db,
        { SANDBOX: 'false', SMS_URL: `http://127.0.0.1:${(sms.address() as AddressInfo).port}/messages`, PUBLIC_URL: 'https://doors.example.com' },
        clock,
      );
      await legacyService.latchkey.jobs.runUntilIdle();
      assert.equal(smsTo(phone)[0]?.body.text, `Activate it: ${link('legacyPending')} (pending)`);
      const [, , pending] = await legacy.db.query<{ status: string; text: string }>(
        'SELECT status, row_to_json(m)::text AS text FROM outbound_messages m ORDER BY id',
      );
      assert.equal(pending?.status, 'sent');
      assert.ok(!pending.text.includes('legacyPending'), pending.text);
    } finally {
      await legacyService?.close();
      await legacy.close();
    }
  });

  test('a failing SMS provider never fails the API call; the message is retried until it goes through', async () => {
    smsStatus = 503;
    const res = await issueKey(service, tenant, { channel: 'sms' });
    assert.equal(res.status, 202);
    const failed = await waitFor(async () => {
      const [row] = await database.db.query<{ status: string; attempts: number; last_error: string | null }>(
        'SELECT status, attempts, last_error FROM outbound_messages WHERE invitation_id = $1',
        [res.body.invitation_id],
      );
      return row && row.attempts >= 1 && row.last_error ? row : undefined;
    }, 'a failed attempt');
    assert.equal(failed.status, 'pending');
    assert.match(failed.last_error ?? '', /503/);

    smsStatus = 200;
    offsetMs += 61_000; // the first retry is due a minute later
    await service.latchkey.jobs.runUntilIdle();
    const [row] = await database.db.query<{ status: string; attempts: number }>(
      'SELECT status, attempts FROM outbound_messages WHERE invitation_id = $1',
      [res.body.invitation_id],
    );
    assert.deepEqual(row, { status: 'sent', attempts: 2 });
  });

  test('a provider refusal that quotes the recipient is logged and kept without the address', async () => {
    const t = await keysTenant(service);
    smtpRefusesRecipients = true;
    try {
      const res = await issueKey(service, t, { channel: 'email' });
      const refused = await waitFor(async () => {
        const [row] = await database.db.query<{ last_error: string | null }>('SELECT last_error FROM outbound_messages WHERE invitation_id = $1', [
          res.body.invitation_id,
        ]);
        return row?.last_error ? row.last_error : undefined;
      }, 'the refusal');
      assert.match(refused, /<\[recipient\]>: Recipient address rejected/);
      const line = logLines.find((l) => l.includes('message not sent') && l.includes('[recipient]'));
      assert.ok(line, 'the refusal is logged');
      assert.ok(!logLines.join('\n').includes(t.email), 'the log never holds the address');
    } finally {
      smtpRefusesRecipients = false;
    }
  });

  test('without SANDBOX, the sandbox outbox does not exist', async () => {
    assert.equal((await service.admin('GET', '/admin/v1/sandbox/outbox')).status, 404);
  });
});
