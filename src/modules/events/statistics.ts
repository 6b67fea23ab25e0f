// The embedded database's statistics job (platform/db/statistics.ts) measures growth on the access log, the
// table that grows; the log is this module's, so the measure is asked of its store, not read by the platform.
import type { Database } from '../../platform/db/index.ts';
import { embeddedStatisticsJob } from '../../platform/db/statistics.ts';
import type { Job } from '../../platform/jobs.ts';
import { highestEventId } from './store.ts';

/** ANALYZE of the embedded database after start and whenever the access log has grown by a tenth. */
export function accessLogStatisticsJob(db: Database): Job {
  return embeddedStatisticsJob(db, () => highestEventId(db));
}
