// The key holder's surface (README "The key holder's page"): passkeys bound to phone keys, /my-key.
export { holderHeaders, languageOf, HOLDER_CSP } from './routes.ts';
export { startHolder, type Holder, type HolderModuleDeps } from './start.ts';
export { SETUP_LINK_LIMIT } from './service.ts';
