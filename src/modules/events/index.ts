// The events module's surface for the rest of the service: writing and reading the access log.
export { parseGatewayEvent, REQUEST_ID_PREFIX, type GatewayEvent } from './gateway-event.ts';
export { AccessLogWriter } from './writer.ts';
export type { AccessEntry, AccessEvent, AccessLogLock, WriteGuard } from './schemas.ts';
export { startEvents, type Events } from './start.ts';
