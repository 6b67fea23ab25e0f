// What the service logs of an MQTT connection to MQTT_URL that reconnects by itself (mqtt.js tries every second):
// one warning when it is lost, with the first error; one line when it is back, saying for how long it was down and
// how many errors were not logged meanwhile; never a line per attempt (a broker away for an hour wrote two warnings
// with stacks a second). A connection the broker closes again and again right after accepting it is, most likely,
// another process connected with the same client id: Mosquitto 2.0 closes the older one without a DISCONNECT
// saying why (MQTT 5's 0x8E), so the link tells it from the pattern.
import type { FastifyBaseLogger } from 'fastify';
import type { MqttClient } from 'mqtt';

/** A connection closed within this long of its CONNACK counts as closed right after accepting it. */
const SHORT_LIVED_MS = 5000;
/** This many such closes within FLAP_WINDOW_MS are logged (as a takeover, when the client id is a setting). */
const FLAPS = 3;
const FLAP_WINDOW_MS = 60_000;
/** That line is repeated at most this often while it goes on. */
const FLAP_LOG_EVERY_MS = 10 * 60_000;

export interface ConnectionLogOptions {
  /** What the lines call the connection, e.g. `mqtt` or `dynamic-security control connection`. */
  name: string;
  /** The client id, for the takeover line. */
  clientId: string;
  /** The setting that names the client id (MQTT_CLIENT_ID), when there is one: only then can another process take it. */
  clientIdSetting?: string;
  /** The client is connected already (its first CONNACK came before this was called). */
  connected?: boolean;
}

/** Follows `client`'s connection and logs as above. `now` is real time (reconnects are). */
export function logConnection(client: MqttClient, log: FastifyBaseLogger, options: ConnectionLogOptions, now: () => number = Date.now): void {
  let connectedAt: number | null = options.connected ? now() : null;
  /** When the connection was lost (null while up); whether an error of this outage was logged, and how many were not. */
  let lostAt: number | null = null;
  let errorLogged = false;
  let unlogged = 0;
  /** When connections closed right after being accepted, within the last FLAP_WINDOW_MS. */
  let shortLived: number[] = [];
  let flapLoggedAt = -Infinity;
  const flapping = (at: number): boolean => {
    shortLived = shortLived.filter((t) => at - t < FLAP_WINDOW_MS);
    return shortLived.length >= FLAPS;
  };

  client.on('connect', () => {
    connectedAt = now();
    if (lostAt === null) return;
    // While the broker closes it again at once, "back" would be written every second: the flapping line says it.
    if (!flapping(connectedAt)) log.info({ downForMs: connectedAt - lostAt, errorsNotLogged: unlogged }, `${options.name} is back`);
    lostAt = null;
    errorLogged = false;
    unlogged = 0;
  });
  client.on('close', () => {
    const at = now();
    if (connectedAt !== null && at - connectedAt < SHORT_LIVED_MS) {
      shortLived.push(at);
      if (flapping(at) && at - flapLoggedAt >= FLAP_LOG_EVERY_MS) {
        flapLoggedAt = at;
        // A takeover is possible only under a client id that is set, not under one of the service's own making.
        const why = options.clientIdSetting
          ? `: most likely another process is connected with the same client id (${options.clientIdSetting}); every instance needs its own`
          : '';
        log.error({ clientId: options.clientId, closes: shortLived.length, withinMs: FLAP_WINDOW_MS }, `the broker keeps closing the ${options.name} right after accepting it${why}`);
      }
    }
    const wasUp = connectedAt !== null;
    connectedAt = null;
    if (lostAt !== null || !wasUp) return;
    lostAt = at;
    if (!flapping(at)) log.warn(`${options.name} lost; reconnecting`);
  });
  client.on('error', (error) => {
    // An error while up is logged whole, and so is the first of an outage; the rest are counted.
    if (lostAt !== null) {
      if (errorLogged) return void unlogged++;
      errorLogged = true;
    }
    log.warn({ err: error }, `${options.name} error`);
  });
}
