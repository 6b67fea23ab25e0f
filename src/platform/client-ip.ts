// Whose X-Forwarded-For entries are believed (TRUST_PROXY, README: Configuration and Security). Every per-IP
// rule (failed-authentication lock-out, the anonymous budget, the request log) reads `request.ip`, which
// Fastify takes from X-Forwarded-For through the proxies this trusts, right to left; the limits count it by
// ipKey.
import ipaddr from 'ipaddr.js';
import type { TrustProxy } from '../config.ts';

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
  let ip: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    ip = ipaddr.process(address);
  } catch {
    return address; // not an address (a test's injected request): counted as given
  }
  if (ip.kind() === 'ipv4') return ip.toString();
  return `${(ip as ipaddr.IPv6).parts
    .slice(0, 4)
    .map((part) => part.toString(16))
    .join(':')}::/64`;
}
