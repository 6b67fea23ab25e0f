// The gateway protocol's topic tree (README "Gateways"), in one place: the service's link, the brokers'
// rules and the operator API's gateway credentials all read it.

export const MQTT_TOPIC_PREFIX = 'latchkey/v1';

/** What a gateway publishes, each on its own topic under its root. */
export const GATEWAY_MESSAGE_TOPICS = ['presence', 'heartbeat', 'events', 'commands/result', 'access/request', 'access/sync', 'access/applied'] as const;
export type GatewayTopic = (typeof GATEWAY_MESSAGE_TOPICS)[number];

/** `{prefix}/gateways/{id}/`: everything a gateway may publish or subscribe to lies under it. */
export function gatewayTopicPrefix(gatewayId: number): string {
  return `${MQTT_TOPIC_PREFIX}/gateways/${gatewayId}/`;
}

/** What the service publishes to a gateway, each on its own topic under its root: the only topics it subscribes to. */
export const SERVICE_MESSAGE_TOPICS = ['commands', 'access/list', 'access/answer'] as const;
export type ServiceTopic = (typeof SERVICE_MESSAGE_TOPICS)[number];

export const serviceTopic = (gatewayId: number, topic: ServiceTopic): string => `${gatewayTopicPrefix(gatewayId)}${topic}`;

/** The service's commands to a gateway. */
export const commandsTopic = (gatewayId: number): string => serviceTopic(gatewayId, 'commands');

/** The topics the service listens to, one per kind of gateway message. */
export const GATEWAY_TOPIC_FILTERS = GATEWAY_MESSAGE_TOPICS.map((t) => `${MQTT_TOPIC_PREFIX}/gateways/+/${t}`);

const GATEWAY_TOPIC = new RegExp(`^${MQTT_TOPIC_PREFIX.replace('/', '\\/')}\\/gateways\\/(\\d+)\\/(${GATEWAY_MESSAGE_TOPICS.join('|').replaceAll('/', '\\/')})$`);

/** The gateway and kind of message of a topic, or null when it is not a gateway message topic. */
export function parseGatewayTopic(topic: string): { gatewayId: number; kind: GatewayTopic } | null {
  const match = GATEWAY_TOPIC.exec(topic);
  return match ? { gatewayId: Number(match[1]), kind: match[2] as GatewayTopic } : null;
}
