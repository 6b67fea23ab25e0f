// The API reference pages: /docs and /admin/docs and every asset they reference are served by the service
// itself, nothing points off-host, and the Content-Security-Policy allows this host only.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { useTestService } from '../helpers/service.ts';

const ctx = useTestService();

/** Every src and href of a page, and every url() of a style sheet. */
const references = (text: string) => [
  ...[...text.matchAll(/\b(?:src|href)="([^"]*)"/g)].map((m) => m[1] as string),
  ...[...text.matchAll(/url\(\s*['"]?([^'")]*)['"]?\s*\)/g)].map((m) => m[1] as string),
];

const onHost = (reference: string) => reference.startsWith('data:') || reference.startsWith('#') || (!/^[a-z][a-z0-9+.-]*:/i.test(reference) && !reference.startsWith('//'));

for (const [page, document] of [['/docs', '/v1/openapi.json'], ['/admin/docs', '/admin/v1/openapi.json']] as const) {
  test(`${page} and every asset it references come from this service`, async () => {
    const res = await ctx.service.request('GET', page);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    const csp = res.headers.get('content-security-policy') ?? '';
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.match(csp, /connect-src 'self'(;|$)/);
    assert.doesNotMatch(csp, /https?:|\*/, 'the policy names no other host');
    assert.ok(res.text.includes(`data-document="${document}"`), 'the page renders its document');

    // Each reference with the address it is read against (a style sheet's url() against the sheet).
    const pending = references(res.text).map((reference) => ({ reference, base: `${ctx.service.url}${page}` }));
    assert.ok(pending.length >= 3, pending.map((p) => p.reference).join(' '));
    const seen = new Set<string>();
    for (let next = pending.shift(); next; next = pending.shift()) {
      const { reference, base } = next;
      assert.ok(onHost(reference), `${page} references ${reference}`);
      if (reference.startsWith('data:') || reference.startsWith('#')) continue;
      const url = new URL(reference, base);
      if (seen.has(url.pathname)) continue;
      seen.add(url.pathname);
      const file = await ctx.service.request('GET', url.pathname);
      assert.equal(file.status, 200, url.pathname);
      if ((file.headers.get('content-type') ?? '').startsWith('text/css')) {
        pending.push(...references(file.text).map((r) => ({ reference: r, base: url.href })));
      }
      if (url.pathname.endsWith('initializer.js')) {
        assert.doesNotMatch(file.text, /https?:\/\//, 'the initializer names no host');
        assert.match(file.text, /validatorUrl: null/, "Swagger UI's online validator stays off");
      }
    }
    assert.ok([...seen].some((a) => a.endsWith('swagger-ui-bundle.js')), 'Swagger UI itself is served here');
  });
}

test('the documents the pages show are served: the public one openly, the operator one with ADMIN_TOKEN', async () => {
  assert.equal((await ctx.service.request('GET', '/v1/openapi.json')).status, 200);
  assert.equal((await ctx.service.request('GET', '/admin/v1/openapi.json')).status, 401);
  assert.equal((await ctx.service.admin('GET', '/admin/v1/openapi.json')).status, 200);
});

test('only the listed assets are served', async () => {
  for (const path of ['/docs/assets/package.json', '/docs/assets/..%2Fpackage.json', '/docs/assets/index.html', '/docs/assets/swagger-ui-bundle.js.map']) {
    const res = await ctx.service.request<{ error: { code: string } }>('GET', path);
    assert.equal(res.status, 404, path);
    assert.equal(res.body.error.code, 'not_found');
  }
});
