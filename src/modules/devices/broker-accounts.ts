// The gateways' accounts on the broker in front of the service: their names, and the port through which the
// operator API keeps them in step with the gateways (mosquitto-dynsec.ts for Mosquitto's dynamic security).
// No imports: the operator module uses it, and the device module imports the operator module.

/** Every broker user name that starts so belongs to the service's gateways. */
const GATEWAY_USERNAME_PREFIX = 'gateway-';
const GATEWAY_USERNAME = /^gateway-([1-9]\d{0,15})$/;

/** A gateway's broker user name, which is also the client id it must connect with. */
export function gatewayUsername(gatewayId: number): string {
  return `${GATEWAY_USERNAME_PREFIX}${gatewayId}`;
}

/**
 * The gateway id of a user name in the gateways' namespace; null for a name in that namespace that names no
 * possible gateway (`gateway-01`); undefined for every other name (the service's own user, other clients).
 */
export function gatewayIdOf(username: string): number | null | undefined {
  if (!username.startsWith(GATEWAY_USERNAME_PREFIX)) return undefined;
  const match = GATEWAY_USERNAME.exec(username);
  const id = match ? Number(match[1]) : NaN;
  return Number.isSafeInteger(id) ? id : null;
}

/** What the operator API tells the broker when a gateway's credentials change. */
export interface GatewayAccounts {
  /**
   * Gives the gateway a broker account with this password, replacing any it had (so live connections on the
   * old password drop). Throws BrokerUnavailableError when the broker cannot be reached or refuses.
   */
  provision(gatewayId: number, password: string): Promise<void>;
  /** Removes the gateway's broker account; its live connections drop. Throws BrokerUnavailableError. */
  remove(gatewayId: number): Promise<void>;
}

/** The embedded broker and brokers that ask the service over HTTP read the database: nothing to provision. */
export const NO_BROKER_ACCOUNTS: GatewayAccounts = {
  provision: async () => undefined,
  remove: async () => undefined,
};

export class BrokerUnavailableError extends Error {
  override name = 'BrokerUnavailableError';

  constructor(
    message: string,
    /** The broker did not answer in time: it may still have carried the change out. */
    readonly unanswered = false,
  ) {
    super(message);
  }
}
