// A real browser for tests: Debian's Chromium (/usr/bin/chromium, the `chromium` package; .ci/run installs
// it) driven by playwright-core, which never downloads a browser of its own. One browser per test file,
// launched on first use and closed after the file's tests; a new context (cookies, storage) per test.
// The service under test is a useTestService() with the socket transport (its default): `ctx.service.url`.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, afterEach } from 'node:test';
import axe from 'axe-core';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'];

/** The widths the console is checked at: a desktop and a small phone. */
export const DESKTOP = { width: 1440, height: 900 } as const;
export const PHONE = { width: 360, height: 780 } as const;

/** Where `screenshot` writes, when LATCHKEY_SCREENSHOTS=1. */
export const SCREENSHOT_DIR = path.resolve('docs/screenshots');

export interface BrowserHarness {
  /** The file's browser (launched on first call). */
  browser(): Promise<Browser>;
  /** A fresh context, closed after the current test. */
  context(options?: BrowserContextOptions): Promise<BrowserContext>;
  /** A page in a fresh context, closed after the current test. */
  page(options?: BrowserContextOptions): Promise<Page>;
}

/**
 * The browser of one test file; call once at the file's top level. A machine without Chromium fails every
 * test that asks for a page, naming the package to install (CI installs it, so nothing is skipped there).
 */
export function useBrowser(): BrowserHarness {
  let launched: Promise<Browser> | undefined;
  let open: BrowserContext[] = [];

  const browser = (): Promise<Browser> => {
    launched ??= launch();
    return launched;
  };

  afterEach(async () => {
    const closing = open;
    open = [];
    for (const context of closing) await context.close().catch(() => undefined);
  });
  after(async () => {
    if (launched) await (await launched.catch(() => undefined))?.close();
  });

  async function context(options: BrowserContextOptions = {}): Promise<BrowserContext> {
    const made = await (await browser()).newContext({ viewport: DESKTOP, ...options });
    // Fail a step in seconds rather than at the test's timeout.
    made.setDefaultTimeout(10_000);
    made.setDefaultNavigationTimeout(15_000);
    open.push(made);
    return made;
  }

  return {
    browser,
    context,
    page: async (options) => (await context(options)).newPage(),
  };
}

async function launch(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `no Chromium at ${CHROMIUM}: the browser tests need Debian's chromium package ` +
        '(apt-get install --no-install-recommends chromium fonts-dejavu-core; .ci/run installs it). ' +
        'playwright-core never downloads a browser.',
    );
  }
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}

export interface Requests {
  /** Every URL the page asked for, in order (navigations, assets, fetches, event streams). */
  urls: string[];
  /** Those not on `origin`, data: and blob: URLs aside. */
  offOrigin(origin: string): string[];
}

/** Records every request the page makes from now on. */
export function recordRequests(page: Page): Requests {
  const urls: string[] = [];
  page.on('request', (request) => urls.push(request.url()));
  return {
    urls,
    offOrigin: (origin) => urls.filter((url) => !/^(data|blob):/.test(url) && new URL(url).origin !== new URL(origin).origin),
  };
}

/**
 * Collects what a person never sees but a broken page shows: uncaught exceptions, console errors (among them
 * Content-Security-Policy refusals) and failed requests. Assert `problems` is empty at the end of a test.
 */
export function watchProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`uncaught: ${error.message}`));
  page.on('console', (message) => {
    // Chromium logs every 4xx and 5xx answer as an error; a page that shows such answers itself is not at fault
    // (requests that fail in the network are caught below).
    if (message.type() !== 'error' || message.text().startsWith('Failed to load resource: the server responded')) return;
    problems.push(`console error: ${message.text()}`);
  });
  page.on('requestfailed', (request) => {
    // An event stream or a fetch cut short by navigating away is not a fault of the page.
    const reason = request.failure()?.errorText ?? '';
    if (reason !== 'net::ERR_ABORTED') problems.push(`request failed: ${request.method()} ${request.url()} ${reason}`);
  });
  return problems;
}

export interface AxeViolation {
  id: string;
  impact: 'serious' | 'critical';
  help: string;
  helpUrl: string;
  targets: string[];
}

/**
 * Runs axe-core (every rule it has) on the page as it is now and returns the violations of impact serious or
 * critical. The page's own CSP (`script-src 'self'`) refuses the inline script axe is injected as: check pages
 * opened in a context made with `{ bypassCSP: true }`, and keep the functional steps in contexts without it.
 */
export async function axeCheck(page: Page): Promise<AxeViolation[]> {
  const present = () => page.evaluate(() => typeof (window as unknown as { axe?: unknown }).axe === 'object');
  if (!(await present())) {
    const refused = "axe-core could not be injected: the page's Content-Security-Policy refused it; open the page in a context made with { bypassCSP: true }";
    await page.addScriptTag({ content: axe.source }).catch((error: Error) => {
      throw new Error(/Content Security Policy/i.test(error.message) ? refused : error.message);
    });
    if (!(await present())) throw new Error(refused);
  }
  const violations = await page.evaluate(async () => {
    const engine = (window as unknown as { axe: { run(context: Document): Promise<{ violations: { id: string; impact?: string | null; help: string; helpUrl: string; nodes: { target: unknown[] }[] }[] }> } }).axe;
    const result = await engine.run(document);
    return result.violations.map((v) => ({ id: v.id, impact: v.impact ?? null, help: v.help, helpUrl: v.helpUrl, targets: v.nodes.map((n) => n.target.map(String).join(' ')) }));
  });
  return violations.filter((v): v is AxeViolation => v.impact === 'serious' || v.impact === 'critical');
}

/** Per violation: impact, rule id, what it asks, and the elements (the first `most` of them). */
export function describeViolations(violations: AxeViolation[], most = 8): string {
  return violations
    .map((v) => {
      const more = v.targets.length > most ? `\n    and ${v.targets.length - most} more` : '';
      return `${v.impact} ${v.id}: ${v.help} (${v.helpUrl})\n    at ${v.targets.slice(0, most).join('\n    at ')}${more}`;
    })
    .join('\n');
}

/** Fails the test with every serious or critical violation of the page as it is now. */
export async function assertAccessible(page: Page, what: string): Promise<void> {
  const violations = await axeCheck(page);
  assert.equal(violations.length, 0, `${what}: ${violations.length} serious or critical accessibility violation(s)\n${describeViolations(violations)}`);
}

/**
 * Writes docs/screenshots/{name}.png when LATCHKEY_SCREENSHOTS=1 (so a normal run never rewrites committed
 * files); returns the path written, or null.
 */
export async function screenshot(page: Page, name: string, options: { fullPage?: boolean } = {}): Promise<string | null> {
  if (process.env.LATCHKEY_SCREENSHOTS !== '1') return null;
  assert.match(name, /^[a-z0-9-]+$/, 'a screenshot name is lower-case words and dashes');
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const file = path.join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path: file, fullPage: options.fullPage ?? true, animations: 'disabled', caret: 'hide' });
  return file;
}

/** A page with what it asked for and what went wrong on it recorded. */
export interface WatchedPage {
  page: Page;
  requests: Requests;
  problems: string[];
}

/** A console page at `path` (under /console), signed in with `token`, loaded, its requests and problems recorded. */
export async function openConsoleSignedIn(harness: BrowserHarness, serviceUrl: string, token: string, path: string, options: BrowserContextOptions = {}): Promise<WatchedPage> {
  const page = await harness.page(options);
  const watched = { page, requests: recordRequests(page), problems: watchProblems(page) };
  const response = await page.request.post(`${serviceUrl}/console/session`, { data: { token } });
  assert.equal(response.status(), 200, await response.text());
  await page.goto(`${serviceUrl}${path}`);
  await page.getByTestId('sign-out').waitFor();
  await page.getByRole('heading', { level: 1 }).first().waitFor();
  await page.getByText('Loading…').first().waitFor({ state: 'detached' });
  return watched;
}

/** Nothing left this service, and nothing failed on the page (no uncaught error, CSP refusal or console error). */
export function assertCleanPage(watched: WatchedPage, serviceUrl: string): void {
  assert.deepEqual(watched.requests.offOrigin(serviceUrl), [], 'every request goes to this service');
  assert.deepEqual(watched.problems, [], 'no uncaught error, CSP refusal or console error');
}
