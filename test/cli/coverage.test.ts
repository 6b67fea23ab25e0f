// Every operation of the operator API (docs/operator-openapi.json) has a `latchkey` command, and every field it
// takes (path, query and body) has a flag or an argument of that command: an operation or a field added to the
// API without one fails here, naming it (README: CLI, "Operator API commands"). And each such flag is sent: the
// command run with it against a server that records requests puts its field in the body or the query.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import type { Command } from 'commander';
import { buildProgram, main } from '../../packages/cli/src/main.ts';

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

/** The parameters of an operation, references resolved. */
function parametersOf(operation: Operation): Array<{ name: string; in: string }> {
  return (operation.parameters ?? []).map((p) => ('$ref' in p ? document.components.parameters?.[p.$ref.split('/').pop() as string] : p) ?? { name: '?', in: '?' });
}

/** The properties of an operation's request body. */
function bodyFieldsOf(operation: Operation): string[] {
  const schema = operation.requestBody?.content['application/json'].schema;
  const body = schema?.$ref ? document.components.schemas[schema.$ref.split('/').pop() as string] : schema;
  return Object.keys(body?.properties ?? {});
}

/** The fields an operation takes: path and query parameters but paging, and the request body's properties. */
function fieldsOf(operation: Operation): string[] {
  return [...parametersOf(operation).map((p) => p.name).filter((name) => !PAGING.has(name)), ...bodyFieldsOf(operation)];
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

/**
 * A value each flag and argument parses (a choice of its own comes first), by name: what is sent is not judged
 * here, only that it is sent.
 */
const SAMPLES: Record<string, string> = {
  name: 'Sample', code: 'office', id: '7', 'key-id': '7', 'device-id': 'device-1', duration: '1h',
  account: '1', parent: '1', location: '1', gateway: '1', 'created-by': '1', person: '3f1c4f4e-0000-4000-8000-000000000001',
  email: 'a@example.com', phone: '+15551234567', company: 'Acme', title: 'Lead', language: 'en', description: 'note', place: 'Hall',
  scopes: 'unlock', 'lock-allowlist': '1,2', 'security-groups': 'staff', 'expires-at': '2030-01-01T00:00:00Z', 'starts-at': '2029-01-01T00:00:00Z',
  window: 'mon-fri,08:00-18:00', 'serial-number': '423187001', provider: 'sample', address: '10.0.0.2', port: '60001', 'door-locks': '1=7',
  credential: 'uid:04a1b2c3', 'phone-key-allowance': '5', 'offline-access': '2h', 'time-zone': 'Europe/Berlin', search: 'ada',
  to: 'a@example.com', 'delay-ms': '10', type: 'card', 'locking-system': 'uhppote', channel: 'sms', doors: '2', online: 'false',
};

function sample(name: string, choices: readonly string[] | undefined): string {
  const value = choices?.[0] ?? SAMPLES[name];
  if (value === undefined) throw new Error(`coverage.test.ts: no sample value for "${name}" (add one to SAMPLES)`);
  return value;
}

interface Recorded {
  method: string;
  query: string[];
  body: string[];
}

test('every body and query field that has a flag is sent when the flag is given', async () => {
  let requests: Recorded[] = [];
  const server = createServer((request: IncomingMessage, response) => {
    let text = '';
    request.on('data', (chunk: Buffer) => (text += chunk.toString()));
    request.on('end', () => {
      const url = new URL(request.url ?? '/', 'http://localhost');
      const body: unknown = text === '' ? {} : JSON.parse(text);
      requests.push({ method: request.method ?? '', query: [...url.searchParams.keys()], body: Object.keys(body as object) });
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: [], next_cursor: null }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const io = {
    out: () => {},
    err: () => {},
    env: {
      LATCHKEY_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      LATCHKEY_ADMIN_TOKEN: 'coverage-token',
      XDG_CONFIG_HOME: mkdtempSync(path.join(os.tmpdir(), 'latchkey-coverage-')),
    },
  };
  const program = buildProgram({ out: () => {}, err: () => {}, env: {} });
  const gaps: string[] = [];
  let checked = 0;
  try {
    for (const operation of operations) {
      const commandPath = COMMANDS[operation.operationId] as string;
      const command = find(program, commandPath);
      if (!command) continue; // the test above names it
      const fields = [...parametersOf(operation).filter((p) => p.in === 'query' && !PAGING.has(p.name)).map((p) => p.name), ...bodyFieldsOf(operation)];
      const base = [
        ...commandPath.split(' '),
        ...command.registeredArguments.map((argument) => sample(argument.name(), argument.argChoices)),
        ...command.options.filter((option) => option.mandatory).flatMap((option) => [option.long as string, sample(option.attributeName().replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`), option.argChoices)]),
      ];
      for (const field of fields) {
        const flags = command.options.filter((option) => namesFor(field).includes(option.long?.replace(/^--(no-)?/, '') ?? ''));
        if (flags.length === 0 && !command.registeredArguments.some((argument) => namesFor(field).includes(argument.name()))) continue; // the test above names it
        // An argument or a required flag is in every run; each other flag is given alone.
        const runs = flags.filter((option) => !option.mandatory).map((option) => {
          const name = (option.long as string).replace(/^--/, '');
          return option.required || option.optional ? [option.long as string, sample(name, option.argChoices)] : [option.long as string];
        });
        for (const extra of runs.length === 0 ? [[]] : runs) {
          requests = [];
          const argv = [...base, ...extra];
          const code = await main(argv, io);
          checked++;
          const sent = requests.some((r) => r.body.includes(field) || r.query.includes(field));
          if (!sent) gaps.push(`${operation.operationId}: latchkey ${argv.join(' ')} (exit ${code}) sends no "${field}"`);
        }
      }
    }
  } finally {
    server.close();
  }
  assert.deepEqual(gaps, []);
  assert.ok(checked >= 100, `only ${checked} runs (108 when written): were the operations' fields found?`);
});
