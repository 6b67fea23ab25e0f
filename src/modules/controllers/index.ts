// UHPPOTE controllers (README "Real controllers"): boards that keep their own card list and decide at the door,
// an account's external locking system. The module's surface: start it, and its operator routes.
import type { FastifyBaseLogger } from 'fastify';
import { createHmac } from 'node:crypto';
import { BOARD_WRITES_CHANNEL } from '../../platform/channels.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Database, Transaction } from '../../platform/db/index.ts';
import { errors } from '../../platform/errors.ts';
import type { Job } from '../../platform/jobs.ts';
import type { Core, Module } from '../../platform/module.ts';
import type { AccessLists } from '../access/index.ts';
import type { UnlockService } from '../devices/index.ts';
import type { AccessLogWriter } from '../events/index.ts';
import { retryTasksNow, type LockingSystems } from '../locking-system/index.ts';
import { ControllerEvents } from './events.ts';
import { queueBoardWrites, UhppoteLockingSystem } from './locking-system.ts';
import { ControllerMonitor, type Presence } from './monitor.ts';
import { reconcileController } from './reconcile.ts';
import { controllerRoutes } from './routes.ts';
import { ControllersService, UHPPOTE_LOCKING_SYSTEM } from './service.ts';
import { KnownBoards } from './known-boards.ts';
import { PushedWakeUps } from './pushes.ts';
import { accountLockingSystem, findController, keysWithValidityEdge, listControllers } from './store.ts';
import { addressOf, ControllerSync, type CardSecrets } from './sync.ts';
import { ControllerUnreachable, UhppoteClient } from './uhppote/client.ts';
import { ControllerEventListener } from './uhppote/listener.ts';

export { ControllersService, UHPPOTE_LOCKING_SYSTEM } from './service.ts';
export { windowsProblem } from './profiles.ts';

/** The listener's known boards are read again this often, a net for a change notification missed (known-boards.ts). */
const KNOWN_BOARDS_REFRESH_SECONDS = 60;

export interface ControllersDeps {
  access: AccessLists;
  accessLog: AccessLogWriter;
  lockingSystems: LockingSystems;
  presence: Presence;
  unlock: UnlockService;
  /** Held key changes every board now holds (the keys module). */
  confirmKeys: (keyIds: number[]) => Promise<unknown>;
  /** Runs the locking-system tasks due now (the one work queue's job). */
  runTasksNow: () => Promise<unknown>;
}

export interface Controllers extends Module {
  service: ControllersService;
  /** The listener's bound address (null: none). */
  listenerAddress(): { host: string; port: number } | null;
  close(): Promise<void>;
}

/** Starts the module (src/platform/module.ts): UHPPOTE boards registered as a locking system, their listener and jobs. */
export async function startControllers(core: Core, deps: ControllersDeps): Promise<Controllers> {
  const { config, db, clock, jobs, log } = core;
  const client = new UhppoteClient({ timeoutMs: config.controllerTimeoutMs, attempts: 2 });
  const cardKey = core.secrets.derive('latchkey uhppote card number v1');
  const secrets: CardSecrets = {
    seal: (value) => core.secrets.seal(value),
    open: (sealed) => core.secrets.open(sealed),
    cardDigest: (card) => createHmac('sha256', cardKey).update(String(card)).digest('base64url'),
  };
  const sync = new ControllerSync({ db, clock, client, secrets, log });
  const events = new ControllerEvents({ db, client, accessLog: deps.accessLog, cardDigest: secrets.cardDigest, log });

  // The locking system of accounts with locking_system "uhppote"; every change to what keys open queues the
  // boards' writes in its transaction, run at once after the commit (and by the job if that fails).
  const writes = { db, clock, sync, log, confirmKeys: deps.confirmKeys };
  deps.lockingSystems.register(UHPPOTE_LOCKING_SYSTEM, (accountId) => new UhppoteLockingSystem(writes, accountId));
  deps.access.onKeysChanged(async (tx: Transaction, accountId, keyIds) => {
    if ((await accountLockingSystem(tx, accountId)) !== UHPPOTE_LOCKING_SYSTEM) return;
    await queueBoardWrites(tx, accountId, keyIds, clock.now());
    await tx.notify(BOARD_WRITES_CHANNEL);
  });
  await db.listen(BOARD_WRITES_CHANNEL, () => void deps.runTasksNow().catch((error: unknown) => log.warn({ err: error }, 'controller writes failed; retried by the job')));

  // Pushes wake a read of the board's events by index; a push's own content is not stored (README). Only pushes of
  // known boards from their addresses get that far, with no database work before.
  const boards = new KnownBoards({ db, log });
  await boards.start();
  jobs.register({ name: 'controller-known-boards', everySeconds: KNOWN_BOARDS_REFRESH_SECONDS, run: () => boards.reload().then(() => 0) });
  const pushes = new PushedWakeUps({ db, events, boards, sync, presence: deps.presence, log });
  const listener = config.controllerListen
    ? await ControllerEventListener.start(config.controllerListen, (status, from) => {
        if (status.event) pushes.pushed(status.serial, status.event.index, from.address);
      })
    : null;

  const monitor = new ControllerMonitor({
    db,
    clock,
    client,
    events,
    presence: deps.presence,
    log,
    eventAddress: () => config.controllerEventAddress ?? concreteAddress(listener?.address() ?? null),
    back: async (board) => {
      if ((await retryTasksNow(db, board.account_id, clock.now())) > 0) await deps.runTasksNow();
    },
    pollSeconds: config.controllerPollSeconds,
  });
  jobs.register({ name: 'controller-poll', everySeconds: config.controllerPollSeconds, run: () => monitor.pollDue() });
  jobs.register(validityEdgesJob(db, clock, sync, log));
  jobs.register(reconcileJob(core, sync, secrets, client, config.controllerReconcileMinutes));

  // Remote unlock: open-door on the board; its answer ends the command as a gateway's result would.
  deps.unlock.handOffTo((gatewayId, command) => {
    void (async () => {
      const controller = await findController(db, gatewayId);
      const door = controller?.door_locks.find((d) => d.lock_id === command.lockId)?.door;
      if (!controller || door === undefined) return deps.unlock.result(gatewayId, { id: command.id, ok: false, error: 'device_missing' });
      try {
        const opened = await client.openDoor(addressOf(controller), door);
        await deps.unlock.result(gatewayId, { id: command.id, ok: opened, ...(opened ? {} : { error: 'device_error' }) });
      } catch (error) {
        // No answer: the command times out as one a gateway never answered.
        if (!(error instanceof ControllerUnreachable)) log.warn({ err: error, gatewayId, commandId: command.id }, 'open-door failed');
      }
    })().catch((error: unknown) => log.warn({ err: error, gatewayId, commandId: command.id }, 'open-door hand-off failed'));
  });

  const service = new ControllersService({
    db,
    clock,
    rulesChanged: (tx, accountId) => deps.access.refresh(tx, accountId, null).then(() => undefined),
    reconcile: async (controller) => {
      try {
        return await reconcileController({ db, clock, client, sync, secrets }, controller);
      } catch (error) {
        if (error instanceof ControllerUnreachable) throw errors.controllerUnreachable();
        throw error;
      }
    },
    pollNow: (controller) => monitor.poll(controller),
    // Its failure is no failure of the change, committed already: the NOTIFY and the job read the boards again.
    boardsChanged: () => boards.reload().catch((error: unknown) => log.warn({ err: error }, 'controllers not read again after a change')),
  });

  return {
    service,
    listenerAddress: () => listener?.address() ?? null,
    routes: (app) => controllerRoutes(app, service),
    async close() {
      await listener?.close();
      await client.close();
    },
  };
}

/** The listener's address when boards can be told it (a concrete IPv4 address, not 0.0.0.0). */
function concreteAddress(listen: { host: string; port: number } | null): { host: string; port: number } | null {
  if (!listen || listen.host === '0.0.0.0' || !/^\d+\.\d+\.\d+\.\d+$/.test(listen.host) || listen.port === 0) return null;
  return listen;
}

/**
 * Cards go on at starts_at and come off at expires_at: the boards know dates only. A board that does not answer
 * then (a reboot, a network blip) gets the keys from the work queue, retried and run at once when it is back:
 * otherwise an expired card would stay on it until the next reconciliation. The edges are looked at again only
 * when even that could not be queued (the database away).
 */
function validityEdgesJob(db: Database, clock: Clock, sync: ControllerSync, log: FastifyBaseLogger): Job {
  let checkedUpTo: Date | null = null;
  return {
    name: 'controller-validity-edges',
    everySeconds: 15,
    run: async () => {
      const now = clock.now();
      // The first run looks back a day: edges passed while no instance ran are caught at the start too.
      const from = checkedUpTo ?? new Date(now.getTime() - 86_400_000);
      const byAccount = new Map<number, number[]>();
      for (const { account_id, key_id } of await keysWithValidityEdge(db, from, now)) byAccount.set(account_id, [...(byAccount.get(account_id) ?? []), key_id]);
      for (const [accountId, keyIds] of byAccount) {
        const written = await sync.syncKeys(accountId, keyIds).then(
          (outcome) => outcome.unreachable.length === 0,
          (error: unknown) => void log.warn({ err: error, accountId }, 'validity edges not written to the boards; queued'),
        );
        if (!written) await db.transaction((tx) => queueBoardWrites(tx, accountId, keyIds, clock.now()));
      }
      checkedUpTo = now;
      return byAccount.size;
    },
  };
}

/** Every board reconciled every `minutes`, by whichever instance gets there (a lease in the poll's column is not needed: the work is idempotent). */
function reconcileJob(core: Core, sync: ControllerSync, secrets: CardSecrets, client: UhppoteClient, minutes: number): Job {
  const { db, clock, log } = core;
  return {
    name: 'controller-reconcile',
    everySeconds: 60,
    run: async () => {
      const due = clock.now().getTime() - minutes * 60_000;
      let done = 0;
      let after = 0;
      for (;;) {
        const page = await listControllers(db, {}, after, 50);
        if (page.length === 0) break;
        after = page.at(-1)!.gateway_id;
        for (const controller of page) {
          if (controller.reconciled_at && controller.reconciled_at.getTime() > due) continue;
          if (!controller.online) continue;
          await reconcileController({ db, clock, client, sync, secrets }, controller).then(
            () => done++,
            (error: unknown) => log.warn({ err: error, gatewayId: controller.gateway_id }, 'reconciliation failed; tried again later'),
          );
        }
      }
      return done;
    },
  };
}
