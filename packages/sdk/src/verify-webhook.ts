// Verifies a webhook delivery exactly as docs/spec/public-api-v1.md, Events, "Signature verification" says:
// `X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>`, `t` within 300 s of the receiver's clock,
// the HMAC keyed with the subscription secret over `{t}.{raw body}` (the received bytes), compared in
// constant time. Web Crypto only, so it runs wherever the SDK runs.
import type { WebhookEvent } from './webhook-events.js';

/** The spec's signature timestamp tolerance. */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

export type WebhookVerificationFailure =
  | 'missing_signature'
  | 'malformed_signature'
  | 'timestamp_out_of_tolerance'
  | 'signature_mismatch'
  | 'malformed_body'
  /** The secret is empty or not text, or `now` / `toleranceSeconds` is not a finite time (NaN, Infinity, negative tolerance). */
  | 'invalid_options';

export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
  constructor(
    readonly reason: WebhookVerificationFailure,
    message: string,
  ) {
    super(message);
  }
}

/** A Fetch `Headers`, or a plain object of header values such as Node's `request.headers`. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export interface VerifyOptions {
  /** The receiver's clock; default now. */
  now?: Date | number;
  /** Default 300 (the spec's). */
  toleranceSeconds?: number;
}

/**
 * Verifies the signature of a delivery and returns its parsed body, typed by `type`; throws
 * WebhookVerificationError otherwise. Pass the body exactly as received (not re-serialised JSON).
 */
export async function verifyWebhook(
  rawBody: string | Uint8Array | ArrayBuffer,
  headers: WebhookHeaders,
  secret: string,
  options: VerifyOptions = {},
): Promise<WebhookEvent> {
  // Checked first and strictly: every comparison with NaN is false, so a NaN option let any timestamp pass.
  const { nowMs, tolerance } = checkedOptions(secret, options);
  const header = headerValue(headers, 'x-service-signature');
  if (!header) throw new WebhookVerificationError('missing_signature', 'The X-Service-Signature header is missing.');
  const { t, v1 } = parseSignature(header);
  if (!(Math.abs(nowMs / 1000 - Number(t)) <= tolerance)) {
    throw new WebhookVerificationError('timestamp_out_of_tolerance', `The signature's timestamp is more than ${tolerance} s from now.`);
  }
  const body = bytesOf(rawBody);
  const expected = await hmacSha256(secret, concat(new TextEncoder().encode(`${t}.`), body));
  if (!v1.some((signature) => constantTimeEqual(hexToBytes(signature), expected))) {
    throw new WebhookVerificationError('signature_mismatch', 'The signature does not match the body and the secret.');
  }
  return parseEvent(body);
}

function checkedOptions(secret: unknown, options: VerifyOptions): { nowMs: number; tolerance: number } {
  const invalid = (message: string) => new WebhookVerificationError('invalid_options', message);
  if (typeof secret !== 'string' || secret === '') throw invalid('The signing secret is empty.');
  const { now, toleranceSeconds } = (options ?? {}) as VerifyOptions;
  const nowMs = now === undefined ? Date.now() : typeof now === 'number' ? now : typeof now?.getTime === 'function' ? now.getTime() : Number.NaN;
  if (!Number.isFinite(nowMs)) throw invalid('`now` is not a valid time.');
  const tolerance = toleranceSeconds ?? SIGNATURE_TOLERANCE_SECONDS;
  if (typeof tolerance !== 'number' || !Number.isFinite(tolerance) || tolerance < 0) {
    throw invalid('`toleranceSeconds` must be a finite number of seconds, 0 or more.');
  }
  return { nowMs, tolerance };
}

function headerValue(headers: WebhookHeaders, name: string): string | null {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name);
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return (Array.isArray(value) ? value[0] : value) ?? null;
}

/** `t=<digits>,v1=<hex>`; several `v1` are each tried. */
function parseSignature(header: string): { t: string; v1: string[] } {
  let t: string | undefined;
  const v1: string[] = [];
  for (const part of header.split(',')) {
    const at = part.indexOf('=');
    const [key, value] = at < 0 ? [part.trim(), ''] : [part.slice(0, at).trim(), part.slice(at + 1).trim()];
    if (key === 't') t = value;
    else if (key === 'v1') v1.push(value);
  }
  if (t === undefined || !/^\d{1,15}$/.test(t) || v1.length === 0) {
    throw new WebhookVerificationError('malformed_signature', 'X-Service-Signature is not `t=<unix seconds>,v1=<hex>`.');
  }
  return { t, v1 };
}

function bytesOf(raw: string | Uint8Array | ArrayBuffer): Uint8Array {
  if (typeof raw === 'string') return new TextEncoder().encode(raw);
  return raw instanceof Uint8Array ? raw : new Uint8Array(raw);
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array<ArrayBuffer> {
  const joined = new Uint8Array(a.length + b.length);
  joined.set(a);
  joined.set(b, a.length);
  return joined;
}

async function hmacSha256(secret: string, data: Uint8Array<ArrayBuffer>): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return new Uint8Array(await crypto.subtle.sign('HMAC', key, data));
}

function hexToBytes(hex: string): Uint8Array | null {
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) return null;
  const bytes = new Uint8Array(32);
  for (let i = 0; i < 32; i++) bytes[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}

/** Every byte is compared whatever the first difference, so the time taken says nothing about where it is. */
function constantTimeEqual(given: Uint8Array | null, expected: Uint8Array): boolean {
  if (given === null || given.length !== expected.length) return false;
  let difference = 0;
  for (let i = 0; i < expected.length; i++) difference |= (given[i] ?? 0) ^ (expected[i] ?? 0);
  return difference === 0;
}

function parseEvent(body: Uint8Array): WebhookEvent {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(body));
  } catch {
    throw new WebhookVerificationError('malformed_body', 'The body is not JSON.');
  }
  const envelope = parsed as Record<string, unknown> | null;
  if (
    typeof envelope !== 'object' ||
    envelope === null ||
    typeof envelope.id !== 'string' ||
    typeof envelope.type !== 'string' ||
    typeof envelope.created_at !== 'string' ||
    typeof envelope.data !== 'object' ||
    envelope.data === null
  ) {
    throw new WebhookVerificationError('malformed_body', 'The body is not a delivery envelope `{ id, type, created_at, data }`.');
  }
  return envelope as unknown as WebhookEvent;
}
