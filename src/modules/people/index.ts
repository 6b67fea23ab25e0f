// The people module's surface for the rest of the service: a read of one live person (keys issue to them).
export { findPerson, type PersonRow } from './store.ts';
