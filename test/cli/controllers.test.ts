// `latchkey admin controllers …` against a simulated UHPPOTE board on localhost (the real UDP packets): a board set
// up with the CLI, its doors mapped to locks, a card handed over with the CLI's --credential that the board then
// holds and opens door 1 to, with the security group's --window as a time profile on door 2; reconciled, renamed,
// remapped and deleted with the CLI.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { advanceClock } from '../helpers/fixtures.ts';
import { waitFor } from '../helpers/gateways.ts';
import { useTestService } from '../helpers/service.ts';
import { startSimulatedController, type SimulatedController } from '../helpers/uhppote-simulator.ts';
import { cliFor } from './cli.ts';

const CARD = 'wiegand26:100:58400';
const CARD_NUMBER = 10058400; // facility × 100000 + card, as the boards number Wiegand-26 cards

const ctx = useTestService(undefined, { CONTROLLER_LISTEN: '127.0.0.1:0', CONTROLLER_POLL_SECONDS: '1', CONTROLLER_TIMEOUT_MS: '150' });
const boards: SimulatedController[] = [];
after(async () => {
  for (const board of boards) await board.close();
});

async function board(serial: number): Promise<SimulatedController> {
  const simulated = await startSimulatedController({ serial });
  boards.push(simulated);
  return simulated;
}

/** Until `check` holds, running the due jobs (polls, queued writes) meanwhile; generous on a loaded machine. */
async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  await waitFor(async () => {
    await advanceClock(ctx.service, 0);
    return check();
  }, what, 15_000);
}

interface Controller {
  id: number;
  name: string;
  online: boolean;
  clock_set_at: string | null;
  door_locks: Array<{ door: number; lock_id: number }>;
}

describe('UHPPOTE controllers with the CLI', () => {
  test('set up, a card with its credential on the board and opening its door, reconciled, remapped, deleted', async () => {
    const cli = cliFor(ctx.service);
    const simulated = await board(423187001);
    const account = await cli.json<{ id: number; root_location: { id: number } }>(['admin', 'accounts', 'create', 'Boarded', '--locking-system', 'uhppote']);
    const location = String(account.root_location.id);
    await cli.json(['admin', 'locations', 'update', location, '--time-zone', 'Europe/Berlin']);
    await cli.json(['admin', 'security-groups', 'create', 'staff', '--location', location, '--title', 'Staff']);
    await cli.json(['admin', 'security-groups', 'create', 'lab', '--location', location, '--title', 'Lab', '--window', 'mon-fri,08:00-18:00']);
    const front = await cli.json<{ id: number }>(['admin', 'locks', 'create', 'Front', '--location', location, '--security-groups', 'staff']);
    const lab = await cli.json<{ id: number }>(['admin', 'locks', 'create', 'Lab', '--location', location, '--security-groups', 'lab']);

    const created = await cli.json<Controller & { serial_number: number; doors: number; port: number }>([
      'admin', 'controllers', 'create', 'Hall board', '--location', location, '--serial-number', String(simulated.serial),
      '--address', simulated.address.host, '--port', String(simulated.address.port), '--doors', '2', '--door-locks', `1=${front.id},2=${lab.id}`,
    ]);
    assert.deepEqual(
      [created.serial_number, created.doors, created.port, created.door_locks],
      [simulated.serial, 2, simulated.address.port, [{ door: 1, lock_id: front.id }, { door: 2, lock_id: lab.id }]],
    );
    const id = String(created.id);
    await until(async () => {
      const view = await cli.json<Controller>(['admin', 'controllers', 'get', id]);
      return view.online && view.clock_set_at !== null;
    }, 'the board online and its first contact recorded');
    const table = await cli.run(['admin', 'controllers', 'list', '--account', String(account.id)]);
    assert.match(table.stdout, /^ID\s+NAME\s+SERIAL\s+ADDRESS\s+LOCATION\s+DOORS\s+ONLINE/m);
    assert.match(table.stdout, new RegExp(`^${id}\\s+Hall board\\s+${simulated.serial}\\s+127\\.0\\.0\\.1:${simulated.address.port}/udp\\s+${location}\\s+1=${front.id}, 2=${lab.id}\\s+true`, 'm'));

    const person = await cli.json<{ id: string }>(['admin', 'people', 'create', 'Katherine Johnson', '--location', location]);
    const card = await cli.json<{ id: number; credential: string }>([
      'admin', 'keys', 'create', 'Badge', '--person', person.id, '--type', 'card', '--credential', CARD, '--security-groups', 'staff,lab',
    ]);
    assert.equal(card.credential, CARD);
    await until(() => simulated.cards.has(CARD_NUMBER), 'the card written to the board');
    const record = simulated.cards.get(CARD_NUMBER);
    assert.equal(record?.doors[0], 1, 'door 1 (staff) at any time');
    const profile = record?.doors[1] ?? 0;
    assert.ok(profile >= 2, `door 2 (lab) by a time profile, not ${profile}`);
    assert.ok(simulated.profiles.has(profile), "the lab group's window is a profile on the board");
    assert.equal(simulated.swipe(CARD_NUMBER, 1).granted, true, 'the card handed over with the CLI opens the door');

    const report = await cli.json<{ cards_on_controller: number; added: unknown[]; removed: unknown[]; problems: string[] }>(['admin', 'controllers', 'reconcile', id]);
    assert.deepEqual([report.cards_on_controller, report.added, report.removed, report.problems], [1, [], [], []]);
    const shown = await cli.run(['admin', 'controllers', 'reconcile', id]);
    assert.match(shown.stdout, /^cards_on_controller\s+1$/m);

    const renamed = await cli.json<Controller>(['admin', 'controllers', 'update', id, '--name', 'Hall', '--door-locks', `1=${front.id}`]);
    assert.deepEqual([renamed.name, renamed.door_locks], ['Hall', [{ door: 1, lock_id: front.id }]]);
    assert.equal((await cli.run(['admin', 'controllers', 'update', id])).code, 2, 'nothing to change');
    await cli.json(['admin', 'keys', 'return', String(card.id)]);
    await until(() => !simulated.cards.has(CARD_NUMBER), 'the returned card off the board');

    // Lock Front is still on its door 1 (and the access log names it, from the swipe): it stays. A second one, never used, goes.
    const used = await cli.run(['admin', 'controllers', 'delete', id]);
    assert.equal(used.code, 1);
    assert.match(used.stderr, /gateway_in_use, HTTP 409/);
    const spare = await board(423187002);
    const other = await cli.json<{ id: number }>([
      'admin', 'controllers', 'create', 'Spare', '--location', location, '--serial-number', String(spare.serial), '--address', spare.address.host, '--port', String(spare.address.port),
    ]);
    assert.deepEqual(await cli.json(['admin', 'controllers', 'delete', String(other.id)]), { id: other.id, deleted: true });
    const gone = await cli.run(['admin', 'controllers', 'get', String(other.id)]);
    assert.match(gone.stderr, /not_found, HTTP 404/);
  });

  test('--doors: 1, 2 and 4 are sent as numbers; anything else is a usage error naming them, before any request', async () => {
    const cli = cliFor(ctx.service);
    const account = await cli.json<{ root_location: { id: number } }>(['admin', 'accounts', 'create', 'Door counts', '--locking-system', 'uhppote']);
    const location = String(account.root_location.id);
    const create = (serial: number, doors: string) =>
      ['admin', 'controllers', 'create', `Board ${doors}`, '--location', location, '--serial-number', String(serial), '--address', '127.0.0.1', '--port', '9', '--doors', doors];
    for (const [i, doors] of [1, 2, 4].entries()) {
      const created = await cli.json<{ doors: number }>(create(423188001 + i, String(doors)));
      assert.equal(created.doors, doors);
    }
    // An unreachable URL: a request would fail with exit 3 or more, so exit 2 shows none was made.
    for (const doors of ['3', '0', '8', 'four', '2.0']) {
      const refused = await cli.run(create(423188010, doors), { LATCHKEY_URL: 'http://127.0.0.1:9' });
      assert.equal(refused.code, 2, `--doors ${doors}: ${refused.stderr}`);
      assert.match(refused.stderr, /--doors <n>.*expected 1, 2 or 4/, `--doors ${doors}`);
    }
  });
});
