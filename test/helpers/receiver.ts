// A real local HTTPS webhook receiver (self-signed certificate trusted through NODE_EXTRA_CA_CERTS).
import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  raw: string;
  body: { id: string; type: string; created_at: string; data: Record<string, unknown> };
  /** When it arrived (Date.now()). */
  at: number;
}

export type Behaviour = { status: number; headers?: Record<string, string> } | 'hang';

export interface Receiver {
  url: (path?: string) => string;
  received: Received[];
  /** How the receiver answers from now on. */
  answer(behaviour: Behaviour): void;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  let behaviour: Behaviour = { status: 200 };
  const server: Server = createServer(
    { key: readFileSync('test/fixtures/tls/key.pem'), cert: readFileSync('test/fixtures/tls/cert.pem') },
    (request, response) => {
      let raw = '';
      request.on('data', (chunk: Buffer) => (raw += chunk.toString()));
      request.on('end', () => {
        let body: Received['body'];
        try {
          body = JSON.parse(raw) as Received['body'];
        } catch {
          body = { id: '', type: '', created_at: '', data: {} };
        }
        received.push({ path: request.url ?? '', headers: request.headers, raw, body, at: Date.now() });
        if (behaviour === 'hang') return; // never answers
        response.writeHead(behaviour.status, { 'content-type': 'application/json', ...behaviour.headers }).end('{"ok":true}');
      });
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (path = '/hook') => `https://localhost:${port}${path}`,
    received,
    answer: (next) => {
      behaviour = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Verifies a delivery as the spec tells receivers to: t within 300 s, HMAC over "{t}.{raw body}". */
export function verifySignature(received: Received, secret: string, nowSeconds: number): boolean {
  const header = String(received.headers['x-service-signature'] ?? '');
  const parts = Object.fromEntries(header.split(',').map((p) => p.split('=') as [string, string]));
  const t = Number(parts.t);
  if (!Number.isFinite(t) || Math.abs(nowSeconds - t) > 300) return false;
  const expected = createHmac('sha256', secret).update(`${parts.t}.${received.raw}`).digest();
  const given = Buffer.from(parts.v1 ?? '', 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}
