// Provisioning by operators (docs/spec/operator-api.md), one service per concern: accounts with their
// locations and users, API keys, gateways, locks with security groups. The SQL is in store.ts.
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import type { AccessLists } from '../access/index.ts';
import type { GatewayAccounts } from '../devices/index.ts';
import { AccountsService } from './accounts.ts';
import { ApiKeysService } from './api-keys.ts';
import { GatewaysService } from './gateways.ts';
import { LocksService } from './locks.ts';

export interface OperatorDeps {
  db: Database;
  clock: Clock;
  /** Where gateways dial: MQTT_URL, or the embedded broker on PUBLIC_URL's host. */
  gatewayMqttUrl: () => string;
  /** The gateways' accounts on the broker in front (Mosquitto dynamic security), or nothing to do. */
  gatewayAccounts: GatewayAccounts;
  /** After a gateway's credentials changed: drops its embedded-broker connection and marks it offline. */
  disconnectGateway: (gatewayId: number) => void;
  /** Gateway access lists, refreshed when a lock, a security group's windows or a time zone changes. */
  access: AccessLists;
}

export class OperatorService {
  readonly accounts: AccountsService;
  readonly apiKeys: ApiKeysService;
  readonly gateways: GatewaysService;
  readonly locks: LocksService;

  constructor(deps: OperatorDeps) {
    this.accounts = new AccountsService(deps);
    this.apiKeys = new ApiKeysService(deps);
    this.gateways = new GatewaysService(deps);
    this.locks = new LocksService(deps);
  }
}
