// Run once by scripts/test.mjs before the test files: builds the migrated embedded cluster that every test
// database on PGlite copies (helpers/database.ts), so that the first processes of a run do not each build it.
import { writeMigratedTemplate } from '../../src/platform/db/migrated-template.ts';

await writeMigratedTemplate();
