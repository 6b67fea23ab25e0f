// A resend (or a cancel) withdraws a message while its SMS is at the provider: the provider's late "accepted"
// cannot be undone, but the message stays `withdrawn` and the invitation's `sent.sms_at` does not take its time.
import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';
import { issueKey, keysTenant } from '../helpers/keys.ts';
import { startService, type TestService } from '../helpers/service.ts';

let database: TestDatabase;
let service: TestService;
let sms: Server;
/** Requests the provider holds: each answers 200 when the test calls `accept`. */
const held: Array<{ text: string; accept: () => void }> = [];
const logLines: string[] = [];

async function waitFor<T>(read: () => Promise<T | undefined> | T | undefined, what: string): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const value = await read();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

before(async () => {
  sms = createServer((request, response: ServerResponse) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      const { text } = JSON.parse(body) as { text: string };
      held.push({ text, accept: () => void (response.headersSent || response.writeHead(200, { 'content-type': 'application/json' }).end('{}')) });
    });
  });
  await new Promise<void>((resolve) => sms.listen(0, '127.0.0.1', resolve));
  database = await createTestDatabase();
  service = await startService(
    database.db,
    { SANDBOX: 'false', SMS_URL: `http://127.0.0.1:${(sms.address() as AddressInfo).port}/messages`, PUBLIC_URL: 'https://doors.example.com' },
    undefined,
    { level: 'info', stream: { write: (line: string) => logLines.push(line) } },
  );
});

after(async () => {
  for (const request of held) request.accept();
  await service?.close();
  await database?.close();
  await new Promise<void>((resolve) => (sms ? sms.close(() => resolve()) : resolve()));
});

interface MessageRow {
  id: number;
  status: string;
  sent_at: Date | null;
}

const messages = (invitationId: number) =>
  database.db.query<MessageRow>('SELECT id, status, sent_at FROM outbound_messages WHERE invitation_id = $1 ORDER BY id', [invitationId]);
const sentSmsAt = async (invitationId: number) =>
  (await database.db.query<{ sent_sms_at: Date | null }>('SELECT sent_sms_at FROM invitations WHERE id = $1', [invitationId]))[0]?.sent_sms_at ?? null;

test('a message withdrawn while at the provider stays withdrawn, and sent.sms_at comes only from the message that replaced it', async () => {
  const tenant = await keysTenant(service);
  const issued = await issueKey(service, tenant, { channel: 'sms' });
  assert.equal(issued.status, 202, issued.text);
  const invitationId = issued.body.invitation_id;
  const first = await waitFor(() => held[0], 'the first SMS at the provider');

  const resent = await service.request('POST', `/v1/invitations/${invitationId}/resend`, { token: tenant.token, body: { channel: 'sms' } });
  assert.equal(resent.status, 202, resent.text);
  assert.deepEqual(
    (await messages(invitationId)).map((m) => m.status),
    ['withdrawn', 'pending'],
  );

  // The provider accepts the first SMS now. The second is sent after that attempt has ended (one dispatch
  // at a time), so once it reaches the provider the first attempt has been recorded.
  first.accept();
  const second = await waitFor(() => held[1], 'the second SMS at the provider');
  assert.notEqual(second.text, first.text, 'a new link');
  const [old] = await messages(invitationId);
  assert.equal(old?.status, 'withdrawn', 'the withdrawn message is not made sent');
  assert.equal(old.sent_at, null);
  assert.equal(await sentSmsAt(invitationId), null, "the invitation's sent time does not come from the withdrawn message");
  const line = logLines.find((l) => l.includes('after it stopped waiting'));
  assert.ok(line, 'the late acceptance is logged');
  assert.deepEqual(
    [JSON.parse(line).level, JSON.parse(line).messageId, JSON.parse(line).status],
    [30, old.id, 'withdrawn'],
  );

  second.accept();
  const sent = await waitFor(async () => {
    const rows = await messages(invitationId);
    return rows[1]?.status === 'sent' ? rows : undefined;
  }, 'the second message sent');
  assert.deepEqual(
    sent.map((m) => m.status),
    ['withdrawn', 'sent'],
  );
  assert.equal((await sentSmsAt(invitationId))?.getTime(), sent[1]?.sent_at?.getTime(), 'sent.sms_at is the new message\'s');
});
