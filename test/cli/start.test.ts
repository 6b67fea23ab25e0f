// How the CLI starts: from the JavaScript build (packages/cli/dist, made by `npm ci`), without tsx or any
// TypeScript source. What a call loads is recorded by a loader hook; no timing is asserted.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { BIN, noProfiles } from './cli.ts';

function loadsOf(args: string[]): { code: number | null; stdout: string; loaded: string[] } {
  const log = path.join(mkdtempSync(path.join(os.tmpdir(), 'latchkey-loads-')), 'loads.txt');
  const recorder = pathToFileURL(path.resolve('test/cli/fixtures/record-loads.mjs')).href;
  const result = spawnSync(process.execPath, ['--import', recorder, BIN, ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: process.env.HOME, XDG_CONFIG_HOME: noProfiles(), RECORD_LOADS: log },
  });
  return { code: result.status, stdout: result.stdout, loaded: existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : [] };
}

test('latchkey --help runs the built JavaScript: no tsx, no .ts module, no gateway simulator or mqtt', () => {
  const { code, stdout, loaded } = loadsOf(['--help']);
  assert.equal(code, 0);
  assert.match(stdout, /^Usage: latchkey/);
  assert.ok(existsSync(path.resolve('packages/cli/dist/latchkey.mjs')), 'npm ci (prepare) built packages/cli/dist');
  assert.ok(loaded.some((url) => url.endsWith('/packages/cli/dist/latchkey.mjs')), loaded.join('\n'));
  assert.deepEqual(loaded.filter((url) => /\.[cm]?ts$|\/node_modules\/tsx\//.test(url)), []);
  assert.deepEqual(loaded.filter((url) => /\/node_modules\/mqtt\/|gateway-simulator|\/node_modules\/cli-table3\//.test(url)), []);
  // The SDK comes by name, from its own build (its package.json's exports), not from its sources.
  assert.deepEqual(loaded.filter((url) => url.includes('/packages/sdk/src/')), []);
});

test('latchkey gateway simulate --help lists its flags without loading the simulator', () => {
  const { code, stdout, loaded } = loadsOf(['gateway', 'simulate', '--help']);
  assert.equal(code, 0);
  assert.match(stdout, /--mqtt-url/);
  assert.deepEqual(loaded.filter((url) => /\/node_modules\/mqtt\/|gateway-simulator|\.[cm]?ts$/.test(url)), []);
});
