// Starting the operator module (src/platform/module.ts): the operator API, /admin/v1.
import type { Core, Module } from '../../platform/module.ts';
import { operatorRoutes } from './routes.ts';
import { OperatorService, type OperatorDeps } from './service.ts';

export type Operator = Module;

export type OperatorModuleDeps = Omit<OperatorDeps, 'db' | 'clock'>;

export function startOperator(core: Core, deps: OperatorModuleDeps): Operator {
  const service = new OperatorService({ db: core.db, clock: core.clock, ...deps });
  return { routes: (app) => operatorRoutes(app, service) };
}
