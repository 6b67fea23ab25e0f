// The API reference pages in a real browser (Debian's Chromium, test/helpers/browser.ts): Swagger UI renders
// the documents, the page asks nothing of any host but this service, and its CSP holds (no refusals logged).
// Also the harness's own checks: axe-core finds what it should, and a page's CSP is minded.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ADMIN_TOKEN, useTestService } from '../helpers/service.ts';
import { axeCheck, recordRequests, screenshot, useBrowser, watchProblems } from '../helpers/browser.ts';

const ctx = useTestService();
const browser = useBrowser();

test('/docs renders the public API reference from this service alone', async () => {
  const page = await browser.page();
  const requests = recordRequests(page);
  const problems = watchProblems(page);
  const response = await page.goto(`${ctx.service.url}/docs`);
  assert.equal(response?.status(), 200);
  assert.equal(await page.title(), 'Latchkey public API reference');
  // Swagger UI has read the document: its title and an operation of it are shown.
  await page.locator('.information-container .title').filter({ hasText: 'Latchkey' }).waitFor();
  await page.locator('.opblock', { hasText: '/v1/people' }).first().waitFor();
  await page.waitForLoadState('networkidle');

  assert.ok(requests.urls.some((url) => url.endsWith('/v1/openapi.json')), requests.urls.join('\n'));
  assert.deepEqual(requests.offOrigin(ctx.service.url), [], 'every request goes to this service');
  assert.deepEqual(problems, []);
  await screenshot(page, 'api-docs', { fullPage: false });
});

test('/admin/docs sends the operator token to this service only and then shows the operator API', async () => {
  const page = await browser.page();
  const requests = recordRequests(page);
  const problems = watchProblems(page);
  await page.goto(`${ctx.service.url}/admin/docs`);
  assert.equal(await page.title(), 'Latchkey operator API reference');
  const authorised: string[] = [];
  page.on('request', (request) => {
    if (request.headers().authorization === `Bearer ${ADMIN_TOKEN}`) authorised.push(request.url());
  });
  await page.getByLabel(/Operator token/).fill(ADMIN_TOKEN);
  await page.getByRole('button', { name: 'Show the reference' }).click();
  await page.locator('.opblock', { hasText: '/admin/v1/accounts' }).first().waitFor();
  await page.waitForLoadState('networkidle');

  assert.deepEqual(authorised, [`${ctx.service.url}/admin/v1/openapi.json`]);
  assert.deepEqual(requests.offOrigin(ctx.service.url), []);
  assert.deepEqual(problems, []);
});

test('axeCheck reports serious and critical violations with their rule, help and elements', async () => {
  const page = await browser.page();
  await page.setContent(`<!doctype html><html lang="en"><head><title>bad</title></head><body><main>
    <img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" id="no-alt"><button id="no-name"></button>
  </main></body></html>`);
  const violations = await axeCheck(page);
  const byId = new Map(violations.map((v) => [v.id, v]));
  assert.deepEqual(byId.get('image-alt')?.targets, ['#no-alt']);
  assert.deepEqual(byId.get('button-name')?.targets, ['#no-name']);
  assert.match(byId.get('image-alt')?.help ?? '', /alternative text/);
  assert.ok(violations.every((v) => v.impact === 'serious' || v.impact === 'critical'));

  await page.setContent(`<!doctype html><html lang="en"><head><title>good</title></head><body><main>
    <h1>Fine</h1><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" alt="a dot"><button>Save</button>
  </main></body></html>`);
  assert.deepEqual(await axeCheck(page), []);
});

test("axeCheck says so when a page's CSP refuses it, and works in a context that bypasses the CSP", async (t) => {
  const strict = await browser.page();
  await strict.goto(`${ctx.service.url}/docs`);
  await assert.rejects(axeCheck(strict), /Content-Security-Policy refused it/);
  const bypassing = await browser.page({ bypassCSP: true });
  await bypassing.goto(`${ctx.service.url}/docs`);
  await bypassing.locator('.opblock').first().waitFor();
  const violations = await axeCheck(bypassing);
  // Swagger UI is a third-party page: its findings are reported (rule ids and counts), not failed on.
  t.diagnostic(`Swagger UI at /docs: ${violations.map((v) => `${v.impact} ${v.id} (${v.targets.length})`).join(', ') || 'none'}`);
});
