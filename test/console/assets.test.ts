// The console's shell and bundle (src/modules/console/assets.ts): deep links get the shell, the bundle is
// built and served under the console's CSP with nothing from elsewhere, and the server part's paths are
// never answered with the shell.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { useTestService } from '../helpers/service.ts';

const ctx = useTestService(undefined, {}, { transport: 'inject' });

function assertSecurityHeaders(headers: Headers): void {
  const csp = headers.get('content-security-policy') ?? '';
  assert.match(csp, /default-src 'self'/);
  assert.match(csp, /script-src 'self'(;|$)/);
  assert.match(csp, /style-src 'self'(;|$)/);
  assert.match(csp, /frame-ancestors 'none'/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
  assert.equal(headers.get('x-content-type-options'), 'nosniff');
  assert.equal(headers.get('referrer-policy'), 'no-referrer');
}

describe('console shell', () => {
  for (const path of ['/console', '/console/', '/console/accounts/7/people/0190c0de-0000-7000-8000-000000000000', '/console/sandbox?x=1']) {
    it(`GET ${path} answers the app shell without a session`, async () => {
      const res = await ctx.service.request('GET', path);
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
      assert.equal(res.headers.get('cache-control'), 'no-store');
      assertSecurityHeaders(res.headers);
      assert.match(res.text, /<script type="module" src="\/console\/assets\/app\.js"><\/script>/);
      assert.match(res.text, /<link rel="stylesheet" href="\/console\/assets\/app\.css">/);
      // Nothing inline: the CSP would block it.
      assert.doesNotMatch(res.text, /<script>|<style|style="/);
    });
  }

  it('does not answer the server part’s paths with the shell', async () => {
    for (const path of ['/console/api/admin/v1/overview', '/console/api/v1/locks', '/console/live', '/console/session', '/console/assets/nope.js']) {
      const res = await ctx.service.request('GET', path);
      assert.notEqual(res.status, 200, path);
      assert.doesNotMatch(res.text, /<!doctype html>/i, path);
      const body = res.body as { error?: { code?: string } };
      assert.equal(typeof body.error?.code, 'string', `${path}: the error envelope`);
    }
  });
});

describe('console bundle', () => {
  it('builds and serves app.js and app.css with the CSP, an ETag and no external URL', async () => {
    const js = await ctx.service.request('GET', '/console/assets/app.js');
    assert.equal(js.status, 200);
    assert.match(js.headers.get('content-type') ?? '', /^text\/javascript/);
    assertSecurityHeaders(js.headers);
    assert.ok(js.text.length > 5000, 'a real bundle');
    assert.match(js.text, /\/console\/api/);
    assert.match(js.text, /EventSource/);
    const css = await ctx.service.request('GET', '/console/assets/app.css');
    assert.equal(css.status, 200);
    assert.match(css.headers.get('content-type') ?? '', /^text\/css/);
    assert.match(css.text, /focus-visible/);
    for (const text of [js.text, css.text]) {
      // XML namespaces (Preact's SVG/MathML support) are names, never fetched.
      const urls = (text.match(/(https?:)?\/\/[a-z0-9.-]+\.[a-z]{2,}[^\s"'`)]*/gi) ?? []).filter((u) => !/^https?:\/\/www\.w3\.org\//.test(u));
      assert.deepEqual(urls, []);
      assert.doesNotMatch(text, /@import|url\(\s*["']?(https?:)?\/\//);
    }
    const etag = js.headers.get('etag');
    assert.ok(etag);
    const again = await ctx.service.request('GET', '/console/assets/app.js', { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304);
  });
});
