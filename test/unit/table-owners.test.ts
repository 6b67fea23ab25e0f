// Every table has one owning module, and only the owner's SQL writes it (INSERT, UPDATE, DELETE). A
// write from another module is listed below with its reason, so a new one fails here and has to say why.
// Reads across modules stay allowed: scoping joins through `locations.path` (and a lock's or person's row)
// inside one statement are what keep a page one round trip; asking the owner's surface instead would cost
// a query per row. The tables are read from the migrations, the SQL from every source file.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

/** Owner of each table: a module under src/modules, or `platform` (src/platform, src/db). */
const OWNERS: Record<string, string> = {
  access_events: 'events',
  access_rebuilds: 'access',
  accounts: 'operator',
  api_keys: 'operator',
  console_session_keys: 'console',
  console_sessions: 'console',
  dashboard_users: 'operator',
  domain_events: 'webhooks',
  gateway_access_entries: 'access',
  gateway_access_pending: 'access',
  gateways: 'operator',
  idempotency_keys: 'platform',
  invitations: 'keys',
  keys: 'keys',
  locations: 'operator',
  lock_commands: 'devices',
  locking_system_tasks: 'locking-system',
  locks: 'operator',
  outbound_messages: 'notifications',
  passkey_challenges: 'holder',
  passkeys: 'holder',
  people: 'people',
  request_log: 'platform',
  sandbox_locking_system_writes: 'locking-system',
  sandbox_locking_systems: 'locking-system',
  sandbox_outbox: 'notifications',
  security_groups: 'operator',
  settings: 'platform',
  uhppote_cards: 'controllers',
  uhppote_controllers: 'controllers',
  uhppote_doors: 'controllers',
  uhppote_time_profiles: 'controllers',
  webhook_deliveries: 'webhooks',
  webhook_subscriptions: 'webhooks',
};

/** Writes by a module that does not own the table: `table module` → why. */
const CROSS_WRITES: Record<string, string> = {
  'accounts keys': "a phone key's activation counts against the account's phone_key_allowance in the same transaction",
  'api_keys console': "the console session's own API key: revoked with its session, a lock added to its allowlist before an unlock",
  'gateways access': 'the access-list columns (version, applied version, list secret, sync claim) are the access module’s',
  'gateways devices': 'presence columns (online, last_seen_at) follow the broker',
  'gateways controllers': "a UHPPOTE board is a gateway of kind 'uhppote': made, renamed and deleted with its controller",
  'locks controllers': "a board's doors are mapped to locks through locks.gateway_id",
  'settings devices': "the sandbox's MQTT publish switch",
  'settings sandbox': "the sandbox clock's offset",
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return name === 'web' ? [] : sourceFiles(full); // browser bundles hold no SQL
    return name.endsWith('.ts') ? [full] : [];
  });
}

const moduleOf = (file: string): string => {
  const parts = file.split(path.sep);
  return parts[1] === 'modules' ? parts[2]! : 'platform';
};

const migrations = readdirSync('src/db/migrations').filter((name) => name.endsWith('.sql'));
const tables = new Set(
  migrations.flatMap((name) => [...readFileSync(path.join('src/db/migrations', name), 'utf8').matchAll(/CREATE TABLE (?:IF NOT EXISTS )?([a-z_]+)/gi)].map((m) => m[1]!)),
);

/** `table module` for every write statement in the source, with the files it is in. */
function writes(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const file of sourceFiles('src')) {
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(/\b(?:INSERT INTO|UPDATE|DELETE FROM)\s+([a-z_]+)\b/g)) {
      const table = match[1]!;
      if (!tables.has(table)) continue; // `UPDATE SET` of ON CONFLICT, CTE names
      const key = `${table} ${moduleOf(file)}`;
      found.set(key, [...new Set([...(found.get(key) ?? []), file])]);
    }
  }
  return found;
}

test('every table the migrations create has an owner, and every owner is a module', () => {
  assert.deepEqual([...tables].filter((t) => !(t in OWNERS)), [], 'tables without an owner in OWNERS');
  assert.deepEqual(Object.keys(OWNERS).filter((t) => !tables.has(t)), [], 'owners of tables that no migration creates');
  const modules = new Set(readdirSync('src/modules'));
  assert.deepEqual(Object.values(OWNERS).filter((m) => m !== 'platform' && !modules.has(m)), []);
});

test("only a table's owner writes it, but for the writes listed with their reason", () => {
  const found = writes();
  const unlisted = [...found].filter(([key]) => {
    const [table, module] = key.split(' ');
    return OWNERS[table!] !== module && !(key in CROSS_WRITES);
  });
  assert.deepEqual(unlisted.map(([key, files]) => `${key}: ${files.join(', ')}`), [], 'writes by a module that does not own the table');
  // A listed write that is gone is taken off the list.
  assert.deepEqual(Object.keys(CROSS_WRITES).filter((key) => !found.has(key)), [], 'CROSS_WRITES entries with no write left');
});
