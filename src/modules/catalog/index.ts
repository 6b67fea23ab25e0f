// The catalog module's surface for the rest of the service (its types and schemas: ./schemas.ts).
export { lockById, locksUnder, unknownSecurityGroups } from './service.ts';
export { startCatalog, type Catalog } from './start.ts';
