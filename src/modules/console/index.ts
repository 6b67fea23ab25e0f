// The operator console (docs/console.md): sessions, the forwarder to the APIs, live updates, the app;
// started by startConsole.
export { startConsole, type Console, type ConsoleModuleDeps } from './start.ts';
