// Starting the catalog module (src/platform/module.ts): locks, security groups and locations as clients read them.
import type { Core, Module } from '../../platform/module.ts';
import { catalogRoutes } from './routes.ts';
import { CatalogService } from './service.ts';

export interface Catalog extends Module {
  service: CatalogService;
}

export async function startCatalog(core: Core): Promise<Catalog> {
  const service = new CatalogService(core.db, core.pages);
  await service.start();
  return { service, routes: (app) => catalogRoutes(app, service) };
}
