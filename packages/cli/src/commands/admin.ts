// latchkey admin …: the operator API (docs/spec/operator-api.md), with the operator token. Every operation of
// docs/operator-openapi.json has a command here or under `latchkey sandbox` (test/cli/coverage.test.ts).
import type { Command } from 'commander';
import type { Io } from '../context.ts';
import { registerAccess } from './admin-access.ts';
import { registerControllers } from './admin-controllers.ts';
import { registerDevices } from './admin-devices.ts';
import { registerPeople } from './admin-people.ts';
import { registerTenancy } from './admin-tenancy.ts';

export function registerAdmin(program: Command, io: Io): void {
  const admin = program
    .command('admin')
    .description(
      'operator API: overview, accounts, locations, users, API keys, security groups, locks, gateways, controllers, people, key hand-overs (operator token)',
    );
  registerTenancy(admin, io);
  registerAccess(admin, io);
  registerDevices(admin, io);
  registerControllers(admin, io);
  registerPeople(admin, io);
}
