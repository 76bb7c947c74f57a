/**
 * What every browser test file shares: Debian's chromium driven by playwright-core, a page that
 * records CSP violations, page errors and dialogs (a script run from user data), sign-in through
 * the real form, axe-core on the page as it is, and screenshots to .screenshots/ (ignored).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { FastifyInstance } from 'fastify';
import { ensureWebBuild, findWebDir } from '../../src/web/build.js';
import { createApp } from '../../src/app.js';
import { testConfig } from '../../src/config.js';
import type { TestStore } from './db.js';

export const CHROMIUM = '/usr/bin/chromium';
export const PASSWORD = 'a-long-enough-password';
const SHOTS = path.resolve('.screenshots');

/** false when chromium is installed, else the reason the browser tests are skipped */
export const skip: false | string = fs.existsSync(CHROMIUM)
  ? false
  : `Debian's chromium is not installed at ${CHROMIUM} (apt-get install -y chromium): browser tests skipped`;
if (skip) process.stdout.write(`# ${skip}\n`);

const require = createRequire(import.meta.url);
const AXE = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

/** The web app's build (made when missing or older than its sources). */
export async function webDist(): Promise<string> {
  return ensureWebBuild({
    webDir: findWebDir()!,
    log: { info: (m) => process.stdout.write(`# ${m}\n`), warn: (m) => process.stdout.write(`# ${m}\n`) },
  });
}

export async function launch(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  fs.mkdirSync(SHOTS, { recursive: true });
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

/** A browser test file's server and browser: the app serving the web app's build on 127.0.0.1, its origin, and chromium. */
export interface Served {
  app: FastifyInstance;
  origin: string;
  browser: Browser;
}

/**
 * The app on the store, serving the web app's build, listening on a free port of 127.0.0.1, and
 * chromium launched (while the build is checked): once per test file, in its before().
 */
export async function serve(store: TestStore): Promise<Served> {
  const [dist, browser] = await Promise.all([webDist(), launch()]);
  try {
    const app = await createApp(testConfig(), { store, sweeper: false, webDist: dist });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const addr = app.server.address();
    return { app, browser, origin: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}` };
  } catch (err) {
    await browser.close();
    throw err;
  }
}

export interface Watched {
  context: BrowserContext;
  page: Page;
  problems: string[];
  dialogs: string[];
}

export async function open(browser: Browser, origin: string, viewport = { width: 1280, height: 800 }): Promise<Watched> {
  const context = await browser.newContext({ viewport, baseURL: origin });
  const page = await context.newPage();
  const problems: string[] = [];
  const dialogs: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' && /Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  return { context, page, problems, dialogs };
}

export async function signIn(page: Page, username: string, password = PASSWORD, clientId = 'acme'): Promise<void> {
  await page.getByLabel('Client Id').fill(clientId);
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/**
 * axe-core on the page once its transitions have ended (a dialog fading in has text of too little
 * contrast for a moment; a spinner's endless animation is not waited for): no serious or critical violation.
 */
export async function axe(page: Page, screen: string): Promise<void> {
  await settled(page);
  await page.evaluate(AXE);
  const violations = await page.evaluate(async () => {
    const r = await (window as any).axe.run(document, { resultTypes: ['violations'] });
    return r.violations
      .filter((v: any) => v.impact === 'serious' || v.impact === 'critical')
      .map(
        (v: any) =>
          `${v.id} (${v.impact}): ${v.help} — ${v.nodes
            .map((n: any) => n.target.join(' '))
            .slice(0, 3)
            .join(', ')}`,
      );
  });
  assert.deepEqual(violations, [], `axe on ${screen}`);
}

export async function shot(page: Page, name: string): Promise<void> {
  const size = page.viewportSize();
  await page.screenshot({ path: path.join(SHOTS, `${name}-${size?.width}x${size?.height}.png`), fullPage: false });
}

/** No CSP violation, no page error, no dialog (no script ran from user data); closes the context. */
export async function done(w: Watched): Promise<void> {
  assert.deepEqual(w.problems, [], 'no CSP violation and no page error');
  assert.deepEqual(w.dialogs, [], 'no script ran from user data');
  await w.context.close();
}

/** The page's finite animations have ended (endless ones, a spinner, never end and are not waited for). */
async function settled(page: Page): Promise<void> {
  await page.waitForFunction(() =>
    document.getAnimations().every((a) => a.playState !== 'running' || a.effect?.getComputedTiming().endTime === Infinity),
  );
}

/**
 * What reaches past the right edge of the viewport: the page scrolling sideways, any element drawn
 * beyond the edge (inside a scroll box of its own too: on a phone that is content a person must hunt
 * for), and a badge whose text is cut. Empty when the screen fits its width.
 */
export async function overflow(page: Page): Promise<string[]> {
  // a notification sliding in from the right edge is past it only while it moves
  await settled(page);
  // no named functions inside: the test runner's transform would wrap them in a helper the page lacks
  return page.evaluate(() => {
    const width = window.innerWidth;
    const out: string[] = [];
    const doc = document.scrollingElement!.scrollWidth;
    if (doc > width) out.push(`the page is ${doc} px wide in a ${width} px viewport`);
    for (const el of document.body.querySelectorAll('*')) {
      if (!el.checkVisibility({ visibilityProperty: true, opacityProperty: true })) continue;
      const r = el.getBoundingClientRect();
      if (r.width === 0 || r.height === 0) continue;
      // a visually hidden text (1 px, clipped) is for screen readers
      if (r.width <= 1 && r.height <= 1) continue;
      const cut = el.classList.contains('mantine-Badge-label') && el.scrollWidth > el.clientWidth;
      if (r.right <= width + 0.5 && !cut) continue;
      const id = el.closest('[data-testid]')?.getAttribute('data-testid');
      const text = (el.textContent ?? '').trim().replace(/\s+/g, ' ').slice(0, 40);
      const what = `<${el.tagName.toLowerCase()}>${id ? ` in ${id}` : ''} "${text}"`;
      out.push(cut ? `the badge ${what} is cut` : `${what} reaches ${Math.round(r.right)} px`);
    }
    return out.slice(0, 10);
  });
}

/** The screen fits the viewport's width (see overflow). */
export async function fits(page: Page, screen: string): Promise<void> {
  assert.deepEqual(await overflow(page), [], `${screen} fits ${page.viewportSize()?.width} px`);
}
