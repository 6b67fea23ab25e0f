// Starting the operator console (src/platform/module.ts, docs/console.md), with CONSOLE_ENABLED.
import type { Core, Module } from '../../platform/module.ts';
import { consoleAssetRoutes } from './assets.ts';
import { LiveUpdates } from './live.ts';
import { ConsoleProxy } from './proxy.ts';
import { consoleRoutes } from './routes.ts';
import { ConsoleSessions } from './sessions.ts';

export type Console = Module;

export interface ConsoleModuleDeps {
  /** Drops this instance's cached API keys at once when the console revokes its own (the NOTIFY reaches the others). */
  forgetApiKeys: () => void;
}

export async function startConsole(core: Core, deps: ConsoleModuleDeps): Promise<Console> {
  const { db, secrets, config } = core;
  const sessions = new ConsoleSessions(db, core.clock, secrets, () => core.adminTokenHash());
  // At start too: the sessions of an operator token that has just been changed end now, with their keys.
  await sessions.purge();
  core.jobs.register(sessions.purgeJob());
  const live = new LiveUpdates((hash) => sessions.isLive(hash));
  await live.start(db);
  return {
    routes(app) {
      // The forwarder answers through the app's own routes (inject), so it is made with them.
      const proxy = new ConsoleProxy(app, db, secrets, deps.forgetApiKeys);
      // Open streams would hold app.close() until the browsers leave.
      app.addHook('preClose', async () => live.close());
      consoleRoutes(app, { sessions, proxy, live, limits: core.limits, publicUrl: config.publicUrl });
      consoleAssetRoutes(app, { brandName: config.brandName });
    },
  };
}
