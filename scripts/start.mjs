// npm start: builds the service's bundle when its sources changed (scripts/server-bundle.mjs) and runs it in
// this process, so signals reach the service itself. The Node flags are package.json's "start" (the Dockerfile's
// CMD repeats them). `--build` only builds: the Dockerfile does, so the image starts without building.
// Stack traces name the bundle's lines and the functions' own names; NODE_OPTIONS=--enable-source-maps maps
// them to src/ (off by default: it holds the parsed map, about 8 MiB).
import { pathToFileURL } from 'node:url';
import { ensureServerBundle } from './server-bundle.mjs';

const bundle = await ensureServerBundle();
if (!process.argv.includes('--build')) await import(pathToFileURL(bundle).href);
