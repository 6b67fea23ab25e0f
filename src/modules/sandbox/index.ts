// The sandbox module's surface (SANDBOX=true only): the movable clock and its routes.
export { sandboxRoutes } from './routes.ts';
export { SandboxService } from './service.ts';
