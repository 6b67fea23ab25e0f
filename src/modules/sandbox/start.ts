// Starting the sandbox (src/platform/module.ts), with SANDBOX=true only: the clock everyone reads moves on request.
import type { SandboxClock } from '../../platform/clock.ts';
import type { Core, Module } from '../../platform/module.ts';
import { sandboxRoutes } from './routes.ts';
import { SandboxService } from './service.ts';

export type Sandbox = Module;

export async function startSandbox(core: Core, clock: SandboxClock): Promise<Sandbox> {
  const service = new SandboxService(core.db, clock, core.jobs);
  await service.start();
  // The other modules' sandbox routes follow (Module.sandboxRoutes), after every module's routes.
  return { sandboxRoutes: (app) => sandboxRoutes(app, service) };
}
