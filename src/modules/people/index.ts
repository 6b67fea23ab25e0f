// The people module's surface for the rest of the service: a read of one live person (keys issue to them).
export { livePerson, type PersonRow } from './lookup.ts';
export { startPeople, type People, type PeopleModuleDeps } from './start.ts';
