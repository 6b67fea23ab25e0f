// The gateway protocol's topic tree (README "Gateways"), in one place: the service's link, the brokers'
// rules and the operator API's gateway credentials all read it.

export const MQTT_TOPIC_PREFIX = 'latchkey/v1';

/** What a gateway publishes, each on its own topic under its root. */
export const GATEWAY_MESSAGE_TOPICS = ['presence', 'heartbeat', 'events', 'commands/result'] as const;
export type GatewayTopic = (typeof GATEWAY_MESSAGE_TOPICS)[number];

/** `{prefix}/gateways/{id}/`: everything a gateway may publish or subscribe to lies under it. */
export function gatewayTopicPrefix(gatewayId: number): string {
  return `${MQTT_TOPIC_PREFIX}/gateways/${gatewayId}/`;
}

/** The one topic a gateway subscribes to: the service's commands to it. */
export const commandsTopic = (gatewayId: number): string => `${gatewayTopicPrefix(gatewayId)}commands`;

/** The topics the service listens to, one per kind of gateway message. */
export const GATEWAY_TOPIC_FILTERS = GATEWAY_MESSAGE_TOPICS.map((t) => `${MQTT_TOPIC_PREFIX}/gateways/+/${t}`);

const GATEWAY_TOPIC = new RegExp(`^${MQTT_TOPIC_PREFIX.replace('/', '\\/')}\\/gateways\\/(\\d+)\\/(presence|heartbeat|events|commands\\/result)$`);

/** The gateway and kind of message of a topic, or null when it is not a gateway message topic. */
export function parseGatewayTopic(topic: string): { gatewayId: number; kind: GatewayTopic } | null {
  const match = GATEWAY_TOPIC.exec(topic);
  return match ? { gatewayId: Number(match[1]), kind: match[2] as GatewayTopic } : null;
}
