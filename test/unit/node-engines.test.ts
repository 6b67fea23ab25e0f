// The Node versions package.json promises are the ones every locked dependency accepts: `npm ci` on the
// oldest promised release (CI runs Node 20) prints no EBADENGINE warning.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import semver from 'semver';

const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { engines: { node: string }; overrides?: Record<string, unknown> };
const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
};

/** The first release of each range of package.json's engines (`^20.19.0 || ^22.13.0 || >=24`). */
function lowestOfEachRange(range: string): string[] {
  return new semver.Range(range).set.map((comparators) => {
    const lowest = semver.minVersion(comparators.map((c) => c.value).join(' '));
    assert.ok(lowest, `engines range without a lowest version: ${range}`);
    return lowest.version;
  });
}

test('every locked package accepts the lowest Node release of each range package.json promises', () => {
  const promised = lowestOfEachRange(pkg.engines.node);
  assert.ok(promised.some((v) => semver.major(v) === 20), 'Node 20 is promised (README, CI)');
  const refusals: string[] = [];
  for (const [where, entry] of Object.entries(lock.packages)) {
    const wanted = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
    if (!wanted || where === '') continue;
    for (const version of promised) {
      if (!semver.satisfies(version, wanted)) refusals.push(`${where}@${entry.version ?? '?'} wants node ${wanted}, not ${version}`);
    }
  }
  assert.deepEqual(refusals, []);
});

test('the running Node is one package.json promises', () => {
  assert.ok(semver.satisfies(process.version, pkg.engines.node), `${process.version} is outside ${pkg.engines.node}`);
});

test("light-my-request's cookie is pinned to a release for Node 20 that has the function it calls", async () => {
  // light-my-request 6.8 asks for cookie ^2 (Node >= 22) and calls only stringifySetCookie, which 1.1 has too.
  assert.deepEqual(pkg.overrides, { 'light-my-request': { cookie: '1.1.1' } });
  assert.equal(lock.packages['node_modules/light-my-request/node_modules/cookie']?.version, '1.1.1');
  const { default: Fastify } = await import('fastify');
  const app = Fastify();
  app.get('/', async (request) => request.headers.cookie ?? '');
  const reply = await app.inject({ url: '/', cookies: { sid: 'a b;c', other: 'x' } });
  assert.equal(reply.body, 'sid=a%20b%3Bc; other=x');
  await app.close();
});
