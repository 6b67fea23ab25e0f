#!/usr/bin/env node
// The `latchkey` command. It runs the TypeScript sources through tsx (a dependency of the repository), so a
// fresh clone works after `npm ci` with no build step. tsconfig: false keeps the caller's working directory
// (and any tsconfig.json there) out of how the CLI is compiled.
import { tsImport } from 'tsx/esm/api';

const { main } = await tsImport('../src/main.ts', { parentURL: import.meta.url, tsconfig: false });
process.exitCode = await main(process.argv.slice(2));
