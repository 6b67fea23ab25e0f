// Starting the key holder's module (src/platform/module.ts): passkeys bound to phone keys, /my-key and Open.
import type { Core, Module } from '../../platform/module.ts';
import type { UnlockService } from '../devices/index.ts';
import { holderAdminRoutes, holderRoutes } from './routes.ts';
import { HolderService, type HolderDeps } from './service.ts';

export type Holder = Module;

export interface HolderModuleDeps {
  /** Open goes through the remote-unlock path, one command per lock. */
  unlock: UnlockService;
  /** The keys module's setup links: whether one is usable, and its activation. */
  links: Pick<HolderDeps, 'linkUsable' | 'activate'>;
}

export function startHolder(core: Core, deps: HolderModuleDeps): Holder {
  const { config } = core;
  const service = new HolderService({
    db: core.db,
    clock: core.clock,
    publicUrl: config.publicUrl,
    brandName: config.brandName,
    limits: core.limits,
    unlock: deps.unlock,
    linkUsable: (token) => deps.links.linkUsable(token),
    activate: (token, bind) => deps.links.activate(token, bind),
  });
  return {
    routes(app) {
      holderRoutes(app, service, config.brandName);
      holderAdminRoutes(app, service);
    },
  };
}
