// The module contract. Every module under src/modules is started by one function in its index.ts,
// `start<Module>(core, deps)`: `core` is what every module may use (below), `deps` names the surfaces of the
// other modules it needs, so its dependencies are read at its signature. It registers its jobs and
// listeners and returns its surface as a `Module`: app.ts starts the modules in dependency order, installs
// the HTTP plumbing, then registers each module's routes in that same order (Fastify applies a hook only to
// the routes added after it) and closes them in the reverse order.
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.ts';
import type { Clock } from './clock.ts';
import type { Database } from './db/index.ts';
import type { ApiInstance } from './fastify.ts';
import type { JobRunner } from './jobs.ts';
import type { Metrics } from './metrics.ts';
import type { PageCaches } from './page-cache.ts';
import type { RateLimits } from './rate-limit.ts';
import type { SecretBox } from './secret-box.ts';

/** The service's shared parts, made by app.ts before any module starts. */
export interface Core {
  config: Config;
  db: Database;
  clock: Clock;
  jobs: JobRunner;
  log: FastifyBaseLogger;
  metrics: Metrics;
  /** The server key: sealing secrets at rest and deriving keys. */
  secrets: SecretBox;
  /** Pages of the lists clients poll, kept in memory per instance. */
  pages: PageCaches;
  /** Request limits, shared through Redis when REDIS_URL is set. */
  limits: RateLimits;
  /** The operator token's hash as it is now (it can change while the service runs). */
  adminTokenHash(): string;
}

/** What app.ts does with a started module; everything else on it is the module's surface for other modules. */
export interface Module {
  /** Registers its routes; called once the plumbing is installed, in module order. */
  routes?(app: ApiInstance): void | Promise<void>;
  /** Routes that exist only with SANDBOX=true; called after every module's routes, in module order. */
  sandboxRoutes?(app: ApiInstance): void;
  /** Stops what it started; called in the reverse of module order. */
  close?(): Promise<void>;
}
