// The access-decisions module's surface (README "How a door decides"): the one decision, credentials,
// weekly windows, each gateway's access list and the access side of the gateway protocol.
export { gatewayAccessSecret, newPhoneCredential, parseCredential } from './credentials.ts';
export { decide } from './decision.ts';
export { GatewaySync } from './gateway-sync.ts';
export { AccessLists } from './lists.ts';
export { checkWindows, isValidTimeZone } from './schedule.ts';
export type { Decision, TimeWindow } from './types.ts';
export { decideForKey, keyDoors, whatGroupsOpen, type HolderKey, type KeyDoor } from './doors.ts';
export { readKeyGrants, type KeyGrant, type KeyProposal } from './grants.ts';
export { GRANTING_KEY_STATES, WEEKDAYS, type Weekday } from './types.ts';
export { startAccess, type Access } from './start.ts';
