// Starting the events module (src/platform/module.ts): the access log, written from gateways and the
// service's own decisions, read by GET /v1/events.
import type { Core, Module } from '../../platform/module.ts';
import { AccessLogReader } from './reader.ts';
import { eventsRoutes } from './routes.ts';
import { AccessLogWriter } from './writer.ts';

export interface Events extends Module {
  reader: AccessLogReader;
  writer: AccessLogWriter;
}

export async function startEvents(core: Core): Promise<Events> {
  const reader = new AccessLogReader(core.db, core.pages);
  await reader.start();
  // What this instance appends reaches the reader's pages at once; other instances' appends arrive by NOTIFY.
  const writer = new AccessLogWriter(core.db, core.clock, core.log, reader);
  return { reader, writer, routes: (app) => eventsRoutes(app, reader) };
}
