// The operator console (docs/console.md): sessions, the forwarder to the APIs, live updates, the app.
export { consoleRoutes } from './routes.ts';
export { ConsoleSessions } from './sessions.ts';
export { ConsoleProxy } from './proxy.ts';
export { LiveUpdates } from './live.ts';
export { consoleAssetRoutes } from './assets.ts';
