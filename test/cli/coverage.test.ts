// Every operation of the operator API (docs/operator-openapi.json) has a `latchkey` command, and every field it
// takes (path, query and body) has a flag or an argument of that command: an operation or a field added to the
// API without one fails here, naming it (README: CLI, "Operator API commands").
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import type { Command } from 'commander';
import { buildProgram } from '../../packages/cli/src/main.ts';

/** operationId → the command that calls it. */
const COMMANDS: Record<string, string> = {
  getOverview: 'admin overview',
  listAccounts: 'admin accounts list',
  createAccount: 'admin accounts create',
  getAccount: 'admin accounts get',
  updateAccount: 'admin accounts update',
  listLocations: 'admin locations list',
  createLocation: 'admin locations create',
  updateLocation: 'admin locations update',
  listUsers: 'admin users list',
  createUser: 'admin users create',
  createApiKey: 'admin api-keys create',
  listApiKeys: 'admin api-keys list',
  revokeApiKey: 'admin api-keys revoke',
  listSecurityGroups: 'admin security-groups list',
  createSecurityGroup: 'admin security-groups create',
  updateSecurityGroup: 'admin security-groups update',
  listLocks: 'admin locks list',
  createLock: 'admin locks create',
  updateLock: 'admin locks update',
  createGateway: 'admin gateways create',
  listGateways: 'admin gateways list',
  getGateway: 'admin gateways get',
  rotateGatewayPassword: 'admin gateways rotate-password',
  deleteGateway: 'admin gateways delete',
  listControllers: 'admin controllers list',
  createController: 'admin controllers create',
  getController: 'admin controllers get',
  updateController: 'admin controllers update',
  deleteController: 'admin controllers delete',
  reconcileController: 'admin controllers reconcile',
  searchPeople: 'admin people list',
  createOperatorPerson: 'admin people create',
  handOverKey: 'admin keys create',
  getOperatorKey: 'admin keys get',
  setKeyCredential: 'admin keys update',
  returnKey: 'admin keys return',
  listKeyDevices: 'admin keys devices list',
  removeKeyDevice: 'admin keys devices remove',
  getSandboxClock: 'sandbox clock',
  advanceSandboxClock: 'sandbox advance',
  listSandboxOutbox: 'sandbox outbox',
  setSandboxLockingSystem: 'sandbox locking-system set',
  confirmSandboxKeyChanges: 'sandbox locking-system confirm',
  setSandboxMqtt: 'sandbox mqtt',
};

/**
 * A field's flag (or argument) where it is not the field's own name (`location_id` → `--location`,
 * `serial_number` → `--serial-number`); several: any of them.
 */
const NAMES: Record<string, string[]> = {
  q: ['name', 'search'],
  sms_enabled: ['sms'],
  is_default: ['default'],
  company_name: ['company'],
  windows: ['window', 'any-time'],
  offline_access_seconds: ['offline-access'],
  created_by_user_id: ['created-by'],
  seconds: ['duration'],
  id: ['id', 'key-id'],
};

/** The paging parameters every list has (--limit, --cursor, --all). */
const PAGING = new Set(['limit', 'cursor']);

interface Operation {
  operationId: string;
  parameters?: Array<{ name: string; in: string } | { $ref: string }>;
  requestBody?: { content: { 'application/json': { schema: { $ref?: string; properties?: Record<string, unknown> } } } };
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, { properties?: Record<string, unknown> }>; parameters?: Record<string, { name: string; in: string }> };
}

const document = JSON.parse(readFileSync('docs/operator-openapi.json', 'utf8')) as Document;
const METHODS = new Set(['get', 'post', 'put', 'patch', 'delete']);
const operations = Object.values(document.paths).flatMap((methods) => Object.entries(methods).filter(([method]) => METHODS.has(method)).map(([, operation]) => operation));

/** The fields an operation takes: path and query parameters but paging, and the request body's properties. */
function fieldsOf(operation: Operation): string[] {
  const parameters = (operation.parameters ?? []).map((p) => ('$ref' in p ? document.components.parameters?.[p.$ref.split('/').pop() as string] : p));
  const schema = operation.requestBody?.content['application/json'].schema;
  const body = schema?.$ref ? document.components.schemas[schema.$ref.split('/').pop() as string] : schema;
  return [...parameters.map((p) => p?.name ?? '?').filter((name) => !PAGING.has(name)), ...Object.keys(body?.properties ?? {})];
}

function find(program: Command, path: string): Command | undefined {
  let command: Command | undefined = program;
  for (const name of path.split(' ')) command = command?.commands.find((child) => child.name() === name);
  return command;
}

function namesFor(field: string): string[] {
  return NAMES[field] ?? [field.replace(/_id$/, '').replace(/([a-z])([A-Z])/g, '$1-$2').replaceAll('_', '-').toLowerCase()];
}

test('every operation of the operator API has a command, and nothing else is claimed', () => {
  const documented = operations.map((o) => o.operationId).sort();
  const missing = documented.filter((id) => !(id in COMMANDS));
  assert.deepEqual(missing, [], `operations without a latchkey command (add one, then map it in COMMANDS): ${missing.join(', ')}`);
  assert.deepEqual(Object.keys(COMMANDS).sort(), documented, 'COMMANDS names operations the document does not have');
});

test("every field of every operation is a flag or an argument of its command", () => {
  const program = buildProgram({ out: () => {}, err: () => {}, env: {} });
  const gaps: string[] = [];
  for (const operation of operations) {
    const path = COMMANDS[operation.operationId] as string;
    const command = find(program, path);
    if (!command) {
      gaps.push(`${operation.operationId}: no command "latchkey ${path}"`);
      continue;
    }
    const flags = new Set(command.options.map((option) => option.long?.replace(/^--(no-)?/, '')));
    const args = new Set(command.registeredArguments.map((argument) => argument.name()));
    for (const field of fieldsOf(operation)) {
      if (!namesFor(field).some((name) => flags.has(name) || args.has(name))) gaps.push(`${operation.operationId}: "${field}" has no flag or argument on latchkey ${path}`);
    }
  }
  assert.deepEqual(gaps, []);
});
