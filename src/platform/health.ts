// Probes for orchestrators and load balancers (README: Operations): GET /healthz (the process answers) and
// GET /readyz (it can serve: database, MQTT link and its subscriptions, job loop). Open, outside the public API's limits, hidden
// from the OpenAPI documents and silent in the log; the answers name parts and states, nothing more.
// /readyz has a per-address limit of its own, counted per instance before any check runs.
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Database } from './db/index.ts';
import { listMigrations } from './db/migrate.ts';
import type { RateLimits } from './rate-limit.ts';

/** The longest a readiness check waits for the database; a slower one reads as down. */
export const READINESS_TIMEOUT_MS = 2000;

export type CheckState = 'ok' | 'down';
/** The MQTT link's: `not_subscribed` when connected to MQTT_URL without every gateway subscription. */
export type MqttState = CheckState | 'not_subscribed';

export interface ReadinessProbes {
  /** The database answers within READINESS_TIMEOUT_MS and holds every migration this build knows. */
  database(): Promise<boolean>;
  /** The embedded broker listens, or the client is connected to MQTT_URL and subscribed to every gateway topic. */
  mqtt(): MqttState;
  /** The job loop is started and not stopped. */
  jobs(): boolean;
}

export interface Readiness {
  ready: boolean;
  checks: { database: CheckState; mqtt: MqttState; jobs: CheckState };
}

export async function readiness(probes: ReadinessProbes): Promise<Readiness> {
  const database = await probes.database().catch(() => false);
  const checks = {
    database: database ? 'ok' : 'down',
    mqtt: probes.mqtt(),
    jobs: probes.jobs() ? 'ok' : 'down',
  } as const;
  return { ready: Object.values(checks).every((state) => state === 'ok'), checks };
}

/**
 * The database probe: the newest migration of this build is applied. One check at a time however many
 * probes arrive (they share the one in flight), and never longer than READINESS_TIMEOUT_MS.
 */
export async function databaseProbe(db: Database, timeoutMs = READINESS_TIMEOUT_MS): Promise<() => Promise<boolean>> {
  const newest = (await listMigrations()).at(-1)?.version ?? '';
  let inFlight: Promise<boolean> | null = null;
  const check = async (): Promise<boolean> => {
    const rows = await db.query<{ applied: boolean }>({
      name: 'health.migrated',
      text: 'SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1) AS applied',
    }, [newest]);
    return rows[0]?.applied === true;
  };
  return () => {
    inFlight ??= (async () => {
      let timer: NodeJS.Timeout | undefined;
      try {
        return await Promise.race([check(), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)))]);
      } catch {
        return false; // the reason is the database's: the answer says only "down"
      } finally {
        clearTimeout(timer);
        inFlight = null;
      }
    })();
    return inFlight;
  };
}

const State = Type.Union([Type.Literal('ok'), Type.Literal('down')]);
const Alive = Type.Object({ status: Type.Literal('ok') });
const Checked = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('not_ready')]),
  checks: Type.Object({ database: State, mqtt: Type.Union([State, Type.Literal('not_subscribed')]), jobs: State }),
});

/**
 * /readyz requests a minute per client address and instance: a probe every few seconds from each load
 * balancer node is far below it, while a flood (20 connections took 88% of a core) gets cheap 429s.
 */
export const READINESS_PER_MINUTE = 120;

/** `limits`: in memory (per instance, never Redis): it guards this instance's CPU, and probes come per instance. */
export function healthRoutes(app: FastifyInstance, probes: ReadinessProbes, limits: RateLimits): void {
  // Probes arrive every few seconds: no request lines in the log, no authentication.
  const common = { config: { access: { kind: 'open' as const } }, logLevel: 'silent' as const };
  app.get('/healthz', { ...common, schema: { hide: true, response: { 200: Alive } } }, async () => ({ status: 'ok' as const }));
  const limited = async (request: FastifyRequest) => {
    const state = await limits.consume('readyz', request.clientKey, READINESS_PER_MINUTE);
    if (state.exceeded) throw limits.refusal(state);
  };
  app.get('/readyz', { ...common, onRequest: limited, schema: { hide: true, response: { 200: Checked, 503: Checked } } }, async (_request, reply) => {
    const { ready, checks } = await readiness(probes);
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ok' : 'not_ready', checks });
  });
}
