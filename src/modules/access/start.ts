// Starting the access module (src/platform/module.ts): each gateway's access list, kept in step as keys and
// rules change, and the gateways' side of it (online requests, list syncs and pushes, account rebuilds).
import type { Core, Module } from '../../platform/module.ts';
import { GatewaySync } from './gateway-sync.ts';
import { AccessLists } from './lists.ts';
import { ListRebuilds } from './rebuilds.ts';

export interface Access extends Module {
  lists: AccessLists;
  sync: GatewaySync;
}

export async function startAccess(core: Core): Promise<Access> {
  const { db, clock, jobs, log } = core;
  const lists = new AccessLists(core.secrets, clock);
  const sync = new GatewaySync(db, clock, lists, log, core.config.mqttMaxPacketBytes, core.config.gatewayAccessRequestsPerSecond);
  await sync.start();
  jobs.register(sync.pushJob());
  const rebuilds = new ListRebuilds(db, lists, log);
  await rebuilds.start();
  jobs.register(rebuilds.job());
  return { lists, sync };
}
