// A claim holds its messages for a lease (MESSAGE_WORK.leaseSeconds); once it runs out another instance may
// claim them again. So a message is sent only while its lease outlasts the longest its send may take: a slow
// provider makes a batch give its other messages back and claim them again, and every send is bounded.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { MESSAGE_WORK, mayStartSend, RECORD_MARGIN_MS } from '../../src/modules/notifications/message-queue.ts';
import { SEND_TIMEOUT_MS } from '../../src/modules/notifications/notifier.ts';
import type { Clock } from '../../src/platform/clock.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';
import { issueKey, keysTenant } from '../helpers/keys.ts';
import { startService, type TestService } from '../helpers/service.ts';

/** Each SMS takes this long at the provider, on the service clock: the longest the adapter waits. */
const PROVIDER_TAKES_MS = SEND_TIMEOUT_MS.sms;
const MESSAGES = MESSAGE_WORK.batchSize;

let database: TestDatabase;
let service: TestService;
let sms: Server;
let silentSmtp: TcpServer;
const sockets = new Set<Socket>();
let smsStatus = 503;
let offsetMs = 0;
const clock: Clock = { now: () => new Date(Date.now() + offsetMs) };
/** For each SMS the provider took: the message's lease left when it arrived and when it was answered. */
const seen: Array<{ to: string; leftAtArrival: number; leftAtAnswer: number }> = [];

before(async () => {
  sms = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      void (async () => {
        const { to } = JSON.parse(body) as { to: string };
        if (smsStatus === 200) {
          const [row] = await database.db.query<{ claimed_until: Date | null }>(
            `SELECT claimed_until FROM outbound_messages WHERE to_address = $1 AND status = 'pending'`,
            [to],
          );
          const until = row?.claimed_until?.getTime() ?? Number.NaN;
          const leftAtArrival = until - clock.now().getTime();
          offsetMs += PROVIDER_TAKES_MS; // a slow provider
          seen.push({ to, leftAtArrival, leftAtAnswer: until - clock.now().getTime() });
        }
        response.writeHead(smsStatus, { 'content-type': 'application/json' }).end('{}');
      })();
    });
  });
  await new Promise<void>((resolve) => sms.listen(0, '127.0.0.1', resolve));
  // An SMTP server that accepts the connection and never says a word.
  silentSmtp = createTcpServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => silentSmtp.listen(0, '127.0.0.1', resolve));
  database = await createTestDatabase();
  service = await startService(
    database.db,
    {
      SANDBOX: 'false',
      SMS_URL: `http://127.0.0.1:${(sms.address() as AddressInfo).port}/messages`,
      SMTP_URL: `smtp://127.0.0.1:${(silentSmtp.address() as AddressInfo).port}`,
      PUBLIC_URL: 'https://doors.example.com',
    },
    clock,
  );
});

after(async () => {
  await service?.close();
  await database?.close();
  await new Promise<void>((resolve) => (sms ? sms.close(() => resolve()) : resolve()));
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((resolve) => (silentSmtp ? silentSmtp.close(() => resolve()) : resolve()));
});

async function waitFor<T>(read: () => Promise<T | undefined> | T | undefined, what: string, tries = 200): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const value = await read();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('the message lease', () => {
  test('a send starts only while the lease has room for its bound and the write after it', () => {
    const leaseEnds = new Date('2030-01-01T00:02:00Z');
    const at = (msBefore: number) => new Date(leaseEnds.getTime() - msBefore);
    assert.equal(mayStartSend('sms', leaseEnds, at(SEND_TIMEOUT_MS.sms + RECORD_MARGIN_MS)), true);
    assert.equal(mayStartSend('sms', leaseEnds, at(SEND_TIMEOUT_MS.sms + RECORD_MARGIN_MS - 1)), false);
    assert.equal(mayStartSend('email', leaseEnds, at(SEND_TIMEOUT_MS.email + RECORD_MARGIN_MS - 1)), false);
    assert.equal(mayStartSend('sms', leaseEnds, at(-1)), false, 'a lease run out');
    assert.ok(MESSAGE_WORK.leaseSeconds * 1000 >= Math.max(SEND_TIMEOUT_MS.sms, SEND_TIMEOUT_MS.email) + RECORD_MARGIN_MS, 'a fresh lease has room for any send');
  });

  test(`a batch of ${MESSAGES} slow SMS: none is at the provider after its lease, each is sent once, no attempt is lost`, async () => {
    const tenant = await keysTenant(service);
    const phones: string[] = [];
    for (let i = 0; i < MESSAGES; i++) {
      const phone = `+4420794681${String(i).padStart(2, '0')}`;
      const person = await service.request<{ id: string }>('POST', '/v1/people', { token: tenant.token, body: { name: `Slow ${i}`, phone } });
      assert.equal(person.status, 201, person.text);
      const issued = await issueKey(service, { ...tenant, personId: person.body.id }, { channel: 'sms' });
      assert.equal(issued.status, 202, issued.text);
      phones.push(phone);
    }
    // The provider refused each first attempt: all of them are due together a minute later, one batch.
    await waitFor(async () => {
      const [row] = await database.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM outbound_messages WHERE to_address = ANY($1::text[]) AND attempts = 1 AND claimed_until IS NULL AND last_error IS NOT NULL`,
        [phones],
      );
      return row?.n === MESSAGES ? true : undefined;
    }, 'the first attempts');
    smsStatus = 200;
    offsetMs += ((MESSAGE_WORK.ladderSeconds[0] ?? 60) + 1) * 1000;
    await service.latchkey.jobs.runUntilIdle();

    assert.deepEqual(seen.map((s) => s.to).sort(), [...phones].sort(), 'each SMS reached the provider once');
    for (const s of seen) {
      assert.ok(s.leftAtArrival >= PROVIDER_TAKES_MS, `${s.to} arrived with ${s.leftAtArrival} ms of its lease left`);
      assert.ok(s.leftAtAnswer >= 0, `${s.to} was still at the provider ${-s.leftAtAnswer} ms after its lease ran out`);
    }
    const rows = await database.db.query<{ status: string; attempts: number }>(
      'SELECT status, attempts FROM outbound_messages WHERE to_address = ANY($1::text[])',
      [phones],
    );
    assert.deepEqual(
      rows.map((r) => `${r.status} ${r.attempts}`),
      phones.map(() => 'sent 2'),
      'sent, on their second attempt: a message given back is not charged an attempt',
    );
  });

  test('an SMTP server that never answers fails the attempt within the e-mail bound', async () => {
    const tenant = await keysTenant(service);
    const started = Date.now();
    const issued = await issueKey(service, tenant, { channel: 'email' });
    assert.equal(issued.status, 202, issued.text);
    const error = await waitFor(
      async () => {
        const [row] = await database.db.query<{ last_error: string | null }>('SELECT last_error FROM outbound_messages WHERE invitation_id = $1', [issued.body.invitation_id]);
        return row?.last_error ?? undefined;
      },
      'the failed attempt',
      (SEND_TIMEOUT_MS.email + 5_000) / 100,
    );
    const took = Date.now() - started;
    assert.ok(took < SEND_TIMEOUT_MS.email, `the attempt ended after ${took} ms: ${error}`);
    assert.match(error, /Greeting never received/);
  });
});
