// A gateway's SUBSCRIBE to a filter it may not have is logged once per connection, however many filters the
// packet holds: Aedes authorises each filter of a packet on its own (all of them, even after the first
// refusal), and a packet of 3,000 refused filters was 3,000 warn lines. The broker closes the connection on
// the first refusal (broker.ts), so the packets read with that one are counted in the same line.
import type { Client } from 'aedes';
import type { FastifyBaseLogger } from 'fastify';

/** How many refused filters the line names (the rest are counted). */
const SAMPLE_FILTERS = 3;

export class SubscribeRefusals {
  private readonly refused = new WeakMap<Client, { filters: number; sample: string[] }>();

  constructor(private readonly log: FastifyBaseLogger) {}

  /** Counts a refused filter; the first of a connection logs, once the rest of what was read is counted. */
  note(client: Client, gatewayId: number | undefined, filter: string): void {
    const seen = this.refused.get(client);
    if (seen) {
      seen.filters++;
      if (seen.sample.length < SAMPLE_FILTERS) seen.sample.push(filter);
      return;
    }
    const refusal = { filters: 1, sample: [filter] };
    this.refused.set(client, refusal);
    // Aedes authorises the filters of what it read synchronously: they are all counted by then.
    setImmediate(() => this.log.warn({ gatewayId, filters: refusal.filters, sample: refusal.sample }, 'mqtt subscription refused; connection closed'));
  }
}
