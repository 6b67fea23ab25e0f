// Where webhooks may go: https URLs of public hosts only (spec: Webhooks rule 2). Checked on the URL at
// create/update time, and again on every address a name resolves to at delivery time.
import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';

export const MAX_URL_LENGTH = 2048;

/**
 * True for an address a webhook may reach: plain public unicast. Everything else is refused, among it
 * loopback, private, link-local, CGNAT, multicast, broadcast, reserved and documentation ranges, and
 * every IPv6 form that embeds an IPv4 address (IPv4-mapped, NAT64, 6to4, Teredo).
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  return ipaddr.parse(address).range() === 'unicast';
}

const FORBIDDEN_SUFFIXES = ['.local', '.internal', '.localhost'];

export interface UrlVerdict {
  ok: boolean;
  reason?: string;
}

/**
 * Checks a subscription URL. The WHATWG URL parser has already turned numeric, octal and hex spellings
 * of IPv4 addresses into dotted decimal, so they are judged like any other address.
 */
export async function vetWebhookUrl(raw: string, allowHosts: readonly string[]): Promise<UrlVerdict> {
  if (raw.length > MAX_URL_LENGTH) return { ok: false, reason: `url may be at most ${MAX_URL_LENGTH} characters.` };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'url is not a valid URL.' };
  }
  if (url.protocol !== 'https:') return { ok: false, reason: 'url must use https.' };
  if (url.username || url.password) return { ok: false, reason: 'url must not carry credentials.' };
  const host = url.hostname.toLowerCase().replace(/\.$/, '').replace(/^\[(.*)\]$/, '$1');
  if (allowHosts.includes(host)) return { ok: true };
  if (ipaddr.isValid(host)) return isPublicAddress(host) ? { ok: true } : { ok: false, reason: 'url must point to a public host.' };
  if (host === 'localhost' || FORBIDDEN_SUFFIXES.some((suffix) => host.endsWith(suffix)) || !host.includes('.')) {
    return { ok: false, reason: 'url must point to a public host.' };
  }
  // A name that resolves to a forbidden address is refused now; one that does not resolve (yet) is
  // accepted and vetted again at every delivery.
  try {
    const addresses = await lookup(host, { all: true, verbatim: true });
    if (addresses.some((a) => !isPublicAddress(a.address))) return { ok: false, reason: 'url resolves to an address that is not public.' };
  } catch {
    // unresolvable now: decided at delivery time
  }
  return { ok: true };
}
