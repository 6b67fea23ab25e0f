// The sandbox module's surface (SANDBOX=true only): the movable clock and its routes, started by startSandbox.
export { startSandbox, type Sandbox } from './start.ts';
