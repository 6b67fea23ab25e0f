// Whose X-Forwarded-For entries are believed (TRUST_PROXY, README: Configuration and Security). Every per-IP
// rule (failed-authentication lock-out, the anonymous budget, the request log) reads `request.ip`, which
// Fastify takes from X-Forwarded-For through the proxies this trusts, right to left; the limits count it by
// `request.clientKey` (ipKey of it), so that no limit counts an IPv6 client by each of its addresses.
import type { FastifyInstance } from 'fastify';
import ipaddr from 'ipaddr.js';
import type { TrustProxy } from '../config.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** What every per-IP limit counts this request's client by: ipKey(request.ip). */
    readonly clientKey: string;
  }
}

/** `request.clientKey`, worked out from request.ip each time a limit asks (no parse for IPv4: see ipKey). */
export function installClientKey(app: FastifyInstance): void {
  app.decorateRequest('clientKey', {
    getter(this: { ip: string }) {
      return ipKey(this.ip);
    },
  });
}

/** Where a proxy of a hop count may sit: proxy-addr's `loopback`, `linklocal` and `uniquelocal`. */
const PROXY_RANGES = new Set(['loopback', 'linkLocal', 'private', 'uniqueLocal']);

function onProxyNetwork(address: string): boolean {
  try {
    return PROXY_RANGES.has(ipaddr.process(address).range());
  } catch {
    return false;
  }
}

/**
 * Fastify's `trustProxy` for TRUST_PROXY. A list is proxy-addr's own (each hop must be a named proxy). A hop
 * count believes that many entries from the right, and only when the connecting peer is on a loopback,
 * link-local or private address: Fastify refuses plain hop counts (a client reaching the service directly
 * could write any address), and a proxy at a public address must be named.
 */
export function trustProxyOption(trust: TrustProxy, warn: (message: string) => void): false | string[] | ((address: string, hop: number) => boolean) {
  if (trust === false || Array.isArray(trust)) return trust;
  let warned = false;
  return (address, hop) => {
    if (hop >= trust) return false;
    if (hop > 0 || onProxyNetwork(address)) return true;
    if (!warned) {
      warned = true;
      warn(
        'X-Forwarded-For from a peer on a public address is ignored: TRUST_PROXY as true or a number believes proxies on loopback or private addresses only; name the proxy in TRUST_PROXY (addresses, CIDRs)',
      );
    }
    return false;
  };
}

/**
 * What a per-IP limit counts a client by: an IPv4 address (an IPv4-mapped IPv6 one as the IPv4 it is), or an IPv6
 * address's /64. One subscriber, host or cloud instance is given a whole /64 and may write any address in it:
 * counted by the address, each of its 2^64 addresses would have a budget of its own (README: Security).
 */
export function ipKey(address: string): string {
  // The common cases without a parse (ipaddr.js takes microseconds, on every authenticated request).
  if (IPV4.test(address)) return address;
  const mapped = MAPPED_IPV4.exec(address);
  if (mapped) return mapped[1] as string;
  const known = ipv6Keys.get(address);
  if (known !== undefined) return known;
  let ip: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    ip = ipaddr.process(address);
  } catch {
    return address; // not an address (a test's injected request): counted as given
  }
  const key =
    ip.kind() === 'ipv4'
      ? ip.toString()
      : `${(ip as ipaddr.IPv6).parts
          .slice(0, 4)
          .map((part) => part.toString(16))
          .join(':')}::/64`;
  if (ipv6Keys.size >= IPV6_KEYS_KEPT) ipv6Keys.clear();
  ipv6Keys.set(address, key);
  return key;
}

const IPV4 = /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;
const MAPPED_IPV4 = /^::ffff:(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/i;
/** IPv6 addresses seen lately and their /64: a client sends many requests from one. */
const ipv6Keys = new Map<string, string>();
const IPV6_KEYS_KEPT = 10_000;
