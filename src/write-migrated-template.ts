// Builds the embedded database's migrated template (platform/db/migrated-template.ts). Run by the bundle's build
// (scripts/server-bundle.mjs) as a bundle of its own, so that it needs no TypeScript loader (the Docker image has none).
import { writeMigratedTemplate } from './platform/db/migrated-template.ts';

const dir = await writeMigratedTemplate();
process.stdout.write(`${dir}\n`);
