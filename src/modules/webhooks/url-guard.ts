// Where webhooks may go: https URLs of public hosts only (spec: Webhooks rule 2). Checked on the URL at
// create/update time, and again on every address a name resolves to at delivery time.
import { Resolver } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';

export const MAX_URL_LENGTH = 2048;

/** IANA's global unicast block: every public IPv6 address lies in it, no IPv4-embedding form does. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

/**
 * True for an address a webhook may reach: plain public unicast. Everything else is refused, among it
 * loopback, private, link-local, CGNAT, multicast, broadcast, reserved and documentation ranges, and
 * every IPv6 form that embeds an IPv4 address (IPv4-compatible `::a.b.c.d`, IPv4-mapped, NAT64, 6to4,
 * Teredo). ipaddr.js calls some of ::/8 (`::7f00:1`) plain unicast, hence the 2000::/3 rule for IPv6.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && !parsed.match(GLOBAL_UNICAST_V6)) return false;
  return parsed.range() === 'unicast';
}

/**
 * The bound on resolving a subscription's host name at create or update time. The lookup goes through
 * c-ares (dns.Resolver), not getaddrinfo: getaddrinfo runs on libuv's small thread pool, which deliveries
 * share, so a slow name in a delivery could hold a create for seconds.
 */
export const CREATE_LOOKUP_DEADLINE_MS = 2000;

export interface LookupOptions {
  /** DNS servers to ask (`host` or `host:port`); the system's by default. Tests point this at a silent server. */
  servers?: string[];
  deadlineMs?: number;
}

type Resolution = { addresses: string[] } | { failure: 'not_found' | 'no_answer' };

/** A and AAAA records of `host`, asked in parallel, within the deadline; a silent server is cut off there. */
export async function resolveHost(host: string, options: LookupOptions = {}): Promise<Resolution> {
  const deadlineMs = options.deadlineMs ?? CREATE_LOOKUP_DEADLINE_MS;
  const resolver = new Resolver({ timeout: Math.ceil(deadlineMs / 3), tries: 2 });
  if (options.servers) resolver.setServers(options.servers);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'deadline'>((resolve) => {
    timer = setTimeout(() => resolve('deadline'), deadlineMs);
  });
  try {
    const answers = await Promise.race([Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]), deadline]);
    if (answers === 'deadline') return { failure: 'no_answer' };
    const addresses = answers.flatMap((answer) => (answer.status === 'fulfilled' ? answer.value : []));
    if (addresses.length > 0) return { addresses };
    // NXDOMAIN or no A/AAAA record: the name does not resolve. Anything else: no answer in time.
    const definite = answers.every((a) => a.status === 'rejected' && ['ENOTFOUND', 'ENODATA'].includes((a.reason as { code?: string }).code ?? ''));
    return { failure: definite ? 'not_found' : 'no_answer' };
  } finally {
    clearTimeout(timer);
    resolver.cancel();
  }
}

const FORBIDDEN_SUFFIXES = ['.local', '.internal', '.localhost'];

/** A host only this network knows: loopback, private and other non-public addresses, `localhost`, `.local` names. */
function looksLocal(host: string): boolean {
  if (ipaddr.isValid(host)) return !isPublicAddress(host);
  return host === 'localhost' || FORBIDDEN_SUFFIXES.some((suffix) => host.endsWith(suffix)) || !host.includes('.');
}

/**
 * How an operator lets the service deliver to a local receiver (a developer's machine, a test): the host in
 * WEBHOOK_ALLOW_HOSTS, over https, its certificate trusted (NODE_EXTRA_CA_CERTS) when it is self-signed.
 */
function allowLocally(host: string): string {
  return (
    ` To deliver to a local receiver, start the service with WEBHOOK_ALLOW_HOSTS=${host} (host names, comma-separated) and serve ` +
    'the receiver over https; for a self-signed certificate, also start the service with NODE_EXTRA_CA_CERTS set to that certificate file.'
  );
}

export interface UrlVerdict {
  ok: boolean;
  reason?: string;
}

/**
 * Control characters (C0, DEL, C1) and whitespace of any kind. The WHATWG URL parser strips tabs and line
 * breaks anywhere and spaces and C0 controls at either end, so such a URL would parse and be delivered to,
 * while the text stored, shown by the API and mailed (the auto-pause e-mail) still held them.
 */
const CONTROL_OR_WHITESPACE = /[\p{Cc}\s]/u;

/** A URL as text safe to put in a message: control characters and whitespace percent-encoded. */
export function printableUrl(url: string): string {
  return url.replace(/[\p{Cc}\s]/gu, (c) => encodeURIComponent(c));
}

/**
 * Checks a subscription URL. The WHATWG URL parser has already turned numeric, octal and hex spellings
 * of IPv4 addresses into dotted decimal, so they are judged like any other address.
 */
export async function vetWebhookUrl(raw: string, allowHosts: readonly string[], lookup: LookupOptions = {}): Promise<UrlVerdict> {
  if (raw.length > MAX_URL_LENGTH) return { ok: false, reason: `url may be at most ${MAX_URL_LENGTH} characters.` };
  if (CONTROL_OR_WHITESPACE.test(raw)) return { ok: false, reason: 'url must not contain whitespace or control characters (percent-encode them).' };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'url is not a valid URL.' };
  }
  const host = url.hostname.toLowerCase().replace(/\.$/, '').replace(/^\[(.*)\]$/, '$1');
  if (url.protocol !== 'https:') {
    // The spec's rule stands for every host; a local one (or one already allowed) is told how to get there.
    const local = allowHosts.includes(host) || looksLocal(host);
    return { ok: false, reason: `url must use https.${local ? allowLocally(host) : ''}` };
  }
  if (url.username || url.password) return { ok: false, reason: 'url must not carry credentials.' };
  // Port 0 parses but no connection can reach it: every delivery would fail.
  if (url.port === '0') return { ok: false, reason: 'url has port 0, which nothing listens on.' };
  if (allowHosts.includes(host)) return { ok: true };
  const notPublic = { ok: false, reason: `url must point to a public host.${allowLocally(host)}` };
  if (ipaddr.isValid(host)) return isPublicAddress(host) ? { ok: true } : notPublic;
  if (looksLocal(host)) return notPublic;
  // The spec asks for a URL that resolves to a public host: a name must resolve now, within the deadline,
  // and only to public addresses. Every delivery resolves and vets it again.
  const resolution = await resolveHost(host, lookup);
  if ('failure' in resolution) {
    return {
      ok: false,
      reason:
        resolution.failure === 'not_found'
          ? "url's host name does not resolve to any address."
          : `url's host name could not be resolved within ${(lookup.deadlineMs ?? CREATE_LOOKUP_DEADLINE_MS) / 1000} seconds.`,
    };
  }
  if (resolution.addresses.some((address) => !isPublicAddress(address))) {
    return { ok: false, reason: `url resolves to an address that is not public.${allowLocally(host)}` };
  }
  return { ok: true };
}
