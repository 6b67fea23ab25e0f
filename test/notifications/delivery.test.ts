// Real delivery adapters: e-mail to a local SMTP server and SMS to a local HTTP provider, both started
// here; messages are queued with the invitation and sent after commit, with retries.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { SMTPServer } from 'smtp-server';
import type { Clock } from '../../src/platform/clock.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';
import { issueKey, keysTenant, type KeysTenant } from '../helpers/keys.ts';
import { startService, type TestService } from '../helpers/service.ts';

let database: TestDatabase;
let service: TestService;
let smtp: SMTPServer;
let sms: Server;
const mails: Array<{ to: string; raw: string }> = [];
const texts: Array<{ body: Record<string, string>; authorization: string | undefined }> = [];
let smsStatus = 200;
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

before(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
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

  test('without SANDBOX, the sandbox outbox does not exist', async () => {
    assert.equal((await service.admin('GET', '/admin/v1/sandbox/outbox')).status, 404);
  });
});
