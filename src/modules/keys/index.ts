// The keys module's surface for the rest of the service.
export { invitationMessageSent } from './invitations.ts';
export { startKeys, type Keys, type KeysModuleDeps } from './start.ts';
