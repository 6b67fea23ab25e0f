// npm run holder-icons: the key holder's page's PNG icons, rasterised from its SVG icon
// (src/modules/holder/web/icon.svg) by Debian's Chromium through playwright-core (a dev dependency; no image
// library, no browser download), written next to it and committed:
//   icon-192.png, icon-512.png   the web app manifest's icons (transparent outside the rounded square, as the SVG)
//   apple-touch-icon.png (180)   for iOS's home screen, which fills transparency with black and rounds the
//                                corners itself: the square is drawn full bleed on the icon's blue
// Run again after changing icon.svg; the same SVG and Chromium give the same bytes.
import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const WEB_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), '../src/modules/holder/web');
/** The icon's background colour (its rect's fill, the manifest's theme_color). */
const BLUE = '#0b57d0';

/** As test/helpers/browser.ts launches it, with colours kept as written. */
const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--force-color-profile=srgb'];

const ICONS = [
  { file: 'icon-192.png', size: 192, fullBleed: false },
  { file: 'icon-512.png', size: 512, fullBleed: false },
  { file: 'apple-touch-icon.png', size: 180, fullBleed: true },
] as const;

const svg = await readFile(path.join(WEB_DIR, 'icon.svg'), 'utf8');
const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
try {
  for (const icon of ICONS) {
    const context = await browser.newContext({ viewport: { width: icon.size, height: icon.size }, deviceScaleFactor: 1 });
    const page = await context.newPage();
    const image = `data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}`;
    const background = icon.fullBleed ? BLUE : 'transparent';
    await page.setContent(
      `<!doctype html><html><body style="margin:0;background:${background}">` +
        `<img src="${image}" width="${icon.size}" height="${icon.size}" style="display:block" alt=""></body></html>`,
    );
    await page.locator('img').evaluate((img: HTMLImageElement) => img.decode());
    const png = await page.screenshot({ type: 'png', omitBackground: !icon.fullBleed, clip: { x: 0, y: 0, width: icon.size, height: icon.size } });
    await writeFile(path.join(WEB_DIR, icon.file), png);
    console.log(`${icon.file}: ${icon.size}x${icon.size}, ${png.length} bytes, sha256 ${createHash('sha256').update(png).digest('hex').slice(0, 16)}`);
    await context.close();
  }
} finally {
  await browser.close();
}
