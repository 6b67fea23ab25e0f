// What a gateway may do on a broker, in one place: the embedded broker (broker.ts), the Mosquitto
// dynamic-security roles (mosquitto-dynsec.ts) and the HTTP authentication and ACL endpoints
// (broker-auth-routes.ts) all read it (the gateway protocol: a gateway publishes and subscribes only under
// `{p}/gateways/{g}/`, README "Gateways").
import type { Queryable } from '../../platform/db/index.ts';
import { hashToken, sameHash } from '../../platform/secrets.ts';
import { gatewayUsername } from './broker-accounts.ts';
import { gatewayPasswordHash } from './store.ts';
import { GATEWAY_MESSAGE_TOPICS, gatewayTopicPrefix, SERVICE_MESSAGE_TOPICS, serviceTopic } from './topics.ts';

/** The exact topics a gateway publishes on, and the exact topics it subscribes to (what the service sends it). */
export function gatewayPermissions(gatewayId: number): { publish: string[]; subscribe: string[] } {
  const prefix = gatewayTopicPrefix(gatewayId);
  return {
    publish: GATEWAY_MESSAGE_TOPICS.map((topic) => prefix + topic),
    subscribe: SERVICE_MESSAGE_TOPICS.map((topic) => serviceTopic(gatewayId, topic)),
  };
}

export function mayPublish(gatewayId: number, topic: string): boolean {
  return gatewayPermissions(gatewayId).publish.includes(topic);
}

/** Compared as the filter is written: a wildcard that would also cover another gateway's topic is refused. */
export function maySubscribe(gatewayId: number, filter: string): boolean {
  return gatewayPermissions(gatewayId).subscribe.includes(filter);
}

/**
 * `valid` when the credentials are those of an existing gateway: its user name, the same client id (so a gateway
 * cannot pose as another) and its current password (stored as a hash, compared in constant time); `refused` when
 * the gateway exists but they are not; `unknown` when there is no such gateway.
 */
export async function checkGatewayCredentials(db: Queryable, gatewayId: number, clientId: string, password: string): Promise<'valid' | 'refused' | 'unknown'> {
  const username = gatewayUsername(gatewayId);
  const hash = await gatewayPasswordHash(db, gatewayId, username);
  if (hash === undefined) return 'unknown';
  return sameHash(hashToken(password), hash) && clientId === username ? 'valid' : 'refused';
}
