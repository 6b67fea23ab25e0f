// A channel without its provider (no SMTP_URL, no SMS_URL, outside the sandbox) keeps its messages queued, never
// attempted, so they are not failed after the retry ladder's day and a half: a restart that configures it sends them.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { SMTPServer } from 'smtp-server';
import type { Clock } from '../../src/platform/clock.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';
import { activate, issueKey, keysTenant } from '../helpers/keys.ts';
import { startService, type TestService } from '../helpers/service.ts';

let database: TestDatabase;
let service: TestService | undefined;
let smtp: SMTPServer;
let sms: Server;
const mailedTo: string[] = [];
const textedTo: string[] = [];
const texts: string[] = [];
const logLines: string[] = [];
let offsetMs = 0;
const clock: Clock = { now: () => new Date(Date.now() + offsetMs) };

before(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onData(stream, session, callback) {
      stream.resume().on('end', () => {
        for (const rcpt of session.envelope.rcptTo) mailedTo.push(rcpt.address);
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  sms = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      const { to, text } = JSON.parse(body) as { to: string; text: string };
      textedTo.push(to);
      texts.push(text);
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => sms.listen(0, '127.0.0.1', resolve));
  database = await createTestDatabase();
});

after(async () => {
  await service?.close();
  await database?.close();
  await new Promise<void>((resolve) => smtp.close(() => resolve()));
  await new Promise<void>((resolve) => sms.close(() => resolve()));
});

const start = (env: Record<string, string>) =>
  startService(database.db, { SANDBOX: 'false', PUBLIC_URL: 'https://doors.example.com', ...env }, clock, {
    level: 'warn',
    stream: { write: (line: string) => logLines.push(line) },
  });

const messagesTo = (address: string) =>
  database.db.query<{ status: string; attempts: number; last_error: string | null }>(
    'SELECT status, attempts, last_error FROM outbound_messages WHERE to_address = $1',
    [address],
  );

const smsOnly = () => start({ SMS_URL: `http://127.0.0.1:${(sms.address() as AddressInfo).port}/messages` });

/** The e-mail of a `both` invitation: its status and whether it still holds its link. */
const waitingMail = async (address: string) =>
  database.db.query<{ status: string; holds_link: boolean }>(
    'SELECT status, (sealed_content IS NOT NULL OR link IS NOT NULL) AS holds_link FROM outbound_messages WHERE to_address = $1',
    [address],
  );

test('e-mail without SMTP_URL stays queued past the whole retry ladder, SMS goes out, and a restart with SMTP_URL sends it', async () => {
  service = await smsOnly();
  assert.ok(
    logLines.some((line) => line.includes('SMTP_URL is not set')),
    'the start says e-mail will wait',
  );
  const tenant = await keysTenant(service);
  const issued = await issueKey(service, tenant, { channel: 'both' });
  assert.equal(issued.status, 202, issued.text);
  // Past every step of the ladder (1 m … 24 h: about 33 h in all).
  for (let hour = 0; hour < 40; hour++) {
    offsetMs += 3_600_000;
    await service.latchkey.jobs.runUntilIdle();
  }
  assert.deepEqual(textedTo, [tenant.phone], 'the SMS was sent');
  assert.deepEqual(await messagesTo(tenant.email), [{ status: 'pending', attempts: 0, last_error: null }], 'the e-mail was never attempted');
  assert.deepEqual(mailedTo, []);

  await service.close();
  service = await start({ SMTP_URL: `smtp://127.0.0.1:${(smtp.server.address() as AddressInfo).port}` });
  await service.latchkey.jobs.runUntilIdle();
  assert.deepEqual(mailedTo, [tenant.email], 'sent once the channel is configured');
  assert.deepEqual((await messagesTo(tenant.email)).map((m) => m.status), ['sent']);
});

test("an activated invitation's message still waiting on another channel is withdrawn: its link is used", async () => {
  await service?.close();
  service = await smsOnly();
  const tenant = await keysTenant(service);
  assert.equal((await issueKey(service, tenant, { channel: 'both' })).status, 202);
  await service.latchkey.jobs.runUntilIdle();
  const link = /https:\/\/doors\.example\.com\/\S+/.exec(texts.at(-1) ?? '')?.[0];
  assert.ok(link, 'the SMS carried the link');
  assert.equal((await activate(service, link)).status, 200);
  assert.deepEqual(await waitingMail(tenant.email), [{ status: 'withdrawn', holds_link: false }]);
});

test('a message still waiting after 30 days is withdrawn, its link forgotten: the link has expired', async () => {
  await service?.close();
  service = await smsOnly();
  const tenant = await keysTenant(service);
  assert.equal((await issueKey(service, tenant, { channel: 'both' })).status, 202);
  offsetMs += 29 * 86_400_000;
  await service.latchkey.jobs.runUntilIdle();
  assert.deepEqual(await waitingMail(tenant.email), [{ status: 'pending', holds_link: true }], 'still waiting after 29 days');
  offsetMs += 2 * 86_400_000;
  await service.latchkey.jobs.runUntilIdle();
  assert.deepEqual(await waitingMail(tenant.email), [], 'withdrawn, then deleted with the ended messages of its age');
});
