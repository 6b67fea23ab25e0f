// What a gateway may do on a broker, in one place: the embedded broker (broker.ts), the Mosquitto
// dynamic-security roles (mosquitto-dynsec.ts) and the HTTP authentication and ACL endpoints
// (broker-auth-routes.ts) all read it (the gateway protocol: a gateway publishes and subscribes only under
// `{p}/gateways/{g}/`, README "Gateways").
import type { Queryable } from '../../platform/db/index.ts';
import { hashToken, sameHash } from '../../platform/secrets.ts';
import { gatewayUsername } from './broker-accounts.ts';
import { commandsTopic, GATEWAY_MESSAGE_TOPICS, gatewayTopicPrefix } from './topics.ts';


/** The exact topics a gateway publishes on, and the one topic filter it subscribes to (its commands). */
export function gatewayPermissions(gatewayId: number): { publish: string[]; subscribe: string[] } {
  const prefix = gatewayTopicPrefix(gatewayId);
  return {
    publish: GATEWAY_MESSAGE_TOPICS.map((topic) => prefix + topic),
    subscribe: [commandsTopic(gatewayId)],
  };
}

export function mayPublish(gatewayId: number, topic: string): boolean {
  return gatewayPermissions(gatewayId).publish.includes(topic);
}

/** Compared as the filter is written: a wildcard that would also cover the commands topic is refused. */
export function maySubscribe(gatewayId: number, filter: string): boolean {
  return gatewayPermissions(gatewayId).subscribe.includes(filter);
}

/**
 * True when the credentials are those of an existing gateway: its user name, the same client id (so a
 * gateway cannot pose as another) and its current password (stored as a hash, compared in constant time).
 */
export async function gatewayCredentialsValid(db: Queryable, gatewayId: number, clientId: string, password: string): Promise<boolean> {
  const username = gatewayUsername(gatewayId);
  const [row] = await db.query<{ password_hash: string }>('SELECT password_hash FROM gateways WHERE id = $1 AND mqtt_username = $2', [gatewayId, username]);
  const matches = row !== undefined && sameHash(hashToken(password), row.password_hash);
  return matches && clientId === username;
}

export async function gatewayExists(db: Queryable, gatewayId: number): Promise<boolean> {
  return (await db.query('SELECT 1 FROM gateways WHERE id = $1', [gatewayId])).length > 0;
}
