// The people module's surface for the rest of the service: a read of one live person (keys issue to them), and of
// the people deleted lately (the webhooks' sweep).
export { livePerson, peopleDeletedSince, type PersonRow } from './lookup.ts';
export { startPeople, type People, type PeopleModuleDeps } from './start.ts';
