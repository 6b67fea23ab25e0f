// The keys module's surface for the rest of the service.
export { KeysArea } from './area.ts';
export type { KeysDeps } from './common.ts';
export { invitationMessageSent } from './invitations.ts';
export { startKeys, type Keys, type KeysModuleDeps } from './start.ts';
