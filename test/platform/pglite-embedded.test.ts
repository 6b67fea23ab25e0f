// The embedded database's start: a new cluster comes from the committed initdb output (not a fresh initdb), and
// the PostgreSQL settings that bound its memory are the ones in force.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { EMBEDDED_SETTINGS, openPglite, type PgliteDatabase } from '../../src/platform/db/pglite.ts';
import { pgliteVersion, templateFile } from '../../src/platform/db/pglite-template.ts';

const dirs: string[] = [];
after(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function dataDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'latchkey-pglite-'));
  dirs.push(dir);
  return `${dir}/pg`;
}

async function systemIdentifier(db: PgliteDatabase): Promise<string> {
  const [row] = await db.query<{ id: string }>('SELECT system_identifier::text AS id FROM pg_control_system()');
  return row?.id ?? '';
}

test('the installed PGlite has its initdb template (npm run pglite-template after an upgrade)', () => {
  assert.ok(existsSync(templateFile()), `no ${templateFile()} for PGlite ${pgliteVersion()}`);
});

test('a new data directory and an in-memory database start from the template: one cluster, not a fresh initdb each', async () => {
  const onDisk = await openPglite({ dataDir: await dataDir() });
  const inMemory = await openPglite({ dataDir: 'memory' });
  try {
    // initdb gives every cluster its own identifier; the template's copies share the one it was made with.
    assert.equal(await systemIdentifier(onDisk), await systemIdentifier(inMemory));
  } finally {
    await onDisk.close();
    await inMemory.close();
  }
});

test('a cluster unpacked from the template keeps what was committed in it across a restart, and leaves nothing beside it', async () => {
  const dir = await dataDir();
  const first = await openPglite({ dataDir: dir });
  await first.query('CREATE TABLE kept (n int)');
  await first.query('INSERT INTO kept VALUES (42)');
  await first.close();
  const again = await openPglite({ dataDir: dir });
  try {
    assert.deepEqual(await again.query('SELECT n FROM kept'), [{ n: 42 }]);
  } finally {
    await again.close();
  }
  assert.deepEqual(await readdir(path.dirname(dir)), ['pg']); // no unpacking directory left over
});

test('the embedded PostgreSQL runs with the memory settings of EMBEDDED_SETTINGS', async () => {
  const db = await openPglite({ dataDir: await dataDir() });
  try {
    for (const [name, value] of Object.entries(EMBEDDED_SETTINGS)) {
      const [row] = await db.query<Record<string, string>>(`SHOW ${name}`);
      assert.equal(row?.[name], value, name);
    }
    assert.equal(EMBEDDED_SETTINGS.shared_buffers, '16MB');
  } finally {
    await db.close();
  }
});

test('a new WAL segment is made without writing its 16 MB of zeros (wal_init_zero off: the commit that crossed into one waited 100–130 ms)', async () => {
  const dir = await dataDir();
  const db = await openPglite({ dataDir: dir });
  try {
    await db.query('CREATE TABLE wal_probe (n int)');
    await db.query('SELECT pg_switch_wal()');
    await db.query('INSERT INTO wal_probe VALUES (1)'); // the first record of the next segment makes its file
    const [current] = await db.query<{ file: string }>('SELECT pg_walfile_name(pg_current_wal_lsn()) AS file');
    const segment = await stat(`${dir}/pg_wal/${current?.file}`);
    assert.equal(segment.size, 16 * 1024 * 1024, 'the segment has its full size');
    assert.ok(segment.blocks * 512 < segment.size / 4, `${segment.blocks * 512} bytes written of ${segment.size}`);
  } finally {
    await db.close();
  }
});
