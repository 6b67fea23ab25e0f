// UHPPOTE boards as a locking system: a phone key's entity (`invitation:N`, the activation's write and its
// undo when the person was deleted meanwhile) holds nothing on a board, so neither write nor finish asks them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import { UhppoteLockingSystem, type UhppoteWritesDeps } from '../../src/modules/controllers/locking-system.ts';

test('a phone key is written to no board, its creation nor its removal', async () => {
  const asked: unknown[] = [];
  const deps = {
    sync: {
      syncKeys: async (...args: unknown[]) => {
        asked.push(args);
        return { refused: [], problems: [], unreachable: [] };
      },
    },
    confirmKeys: async (ids: number[]) => asked.push(ids),
    log: { warn: () => undefined } as unknown as FastifyBaseLogger,
  } as unknown as UhppoteWritesDeps;
  const boards = new UhppoteLockingSystem(deps, 1);
  assert.equal(await boards.write('key.create', 'invitation:7'), 'applied');
  await boards.finish('key.delete', 'invitation:7');
  assert.deepEqual(asked, []);
  // A card's key is synced and confirmed.
  await boards.finish('key.delete', '12');
  assert.deepEqual(asked, [[1, [12]], [12]]);
});
