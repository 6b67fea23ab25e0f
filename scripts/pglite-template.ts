// npm run pglite-template: writes src/db/pglite/initdb-<PGlite version>.tar.br, the initialised cluster a first
// embedded start loads instead of running initdb (src/platform/db/pglite-template.ts). Run it after upgrading
// @electric-sql/pglite; a test fails while the installed version has none.
import { writeInitdbTemplate } from '../src/platform/db/pglite-template.ts';

const file = await writeInitdbTemplate();
console.log(`wrote ${file}`);
