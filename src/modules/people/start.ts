// Starting the people module (src/platform/module.ts): the people clients manage, and the keys they hold.
import type { Core, Module } from '../../platform/module.ts';
import type { LockingSystems } from '../locking-system/index.ts';
import { peopleRoutes } from './routes.ts';
import { PeopleService, type PeopleDeps } from './service.ts';

export type People = Module;

export interface PeopleModuleDeps {
  lockingSystems: LockingSystems;
  /** The keys module: a person's keys, revoked with them and worked out again when they move. */
  keys: Pick<PeopleDeps, 'keysOfPerson' | 'revokeEverythingOf' | 'personMoved'>;
}

export async function startPeople(core: Core, deps: PeopleModuleDeps): Promise<People> {
  const { keys } = deps;
  const service = new PeopleService({
    db: core.db,
    clock: core.clock,
    lockingSystems: deps.lockingSystems,
    brandName: core.config.brandName,
    log: core.log,
    keysOfPerson: (scope, id) => keys.keysOfPerson(scope, id),
    revokeEverythingOf: (tx, id, now) => keys.revokeEverythingOf(tx, id, now),
    personMoved: (tx, id, accountId) => keys.personMoved(tx, id, accountId),
    pages: core.pages,
  });
  await service.start();
  return { routes: (app) => peopleRoutes(app, service) };
}
