// latchkey admin …: the operator API (docs/spec/operator-api.md), with the operator token.
import type { Command } from 'commander';
import type { Io } from '../context.ts';
import { registerDevices } from './admin-devices.ts';
import { registerTenancy } from './admin-tenancy.ts';

export function registerAdmin(program: Command, io: Io): void {
  const admin = program
    .command('admin')
    .description('operator API: accounts, locations, users, API keys, security groups, locks, gateways, people, key hand-overs (operator token)');
  registerTenancy(admin, io);
  registerDevices(admin, io);
}
