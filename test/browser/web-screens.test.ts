/**
 * The main screens at a desktop's width (1280×800) and a phone's (390×844), in Debian's chromium
 * against the real server with a fresh store: nothing reaches past the viewport's right edge on a
 * phone (overview, queue, task, users, import); a task is named by its key field (title,
 * breadcrumbs, notifications) with its id beside it to copy; a row of the queue opens its task; the
 * reason of an Error a person has moved on reads as the previous reason; a take reads as a take;
 * large counts stay in their tiles; import problems name the field by its label. Screenshots go to
 * .screenshots/.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import type { Browser, Locator, Page } from 'playwright-core';
import { skip, serve, open as openPage, signIn, axe, shot, done, fits } from '../helpers/browser.js';
import { testStore, type TestStore } from '../helpers/db.js';
import { seedTenant, seedUser, type SeededTenant } from '../helpers/seed.js';
import { Mate } from '../helpers/mate.js';
import { personWithToken, asPerson, type TestPerson } from '../helpers/people.js';

let store: TestStore;
let app: FastifyInstance;
let browser: Browser;
let origin: string;
let tenant: SeededTenant;
let mate: Mate;
let root: TestPerson;
let ordersId: number;
/** tasks handed back as Error: one per width, so each width moves its own */
const failed: Record<'desk' | 'phone', number> = { desk: 0, phone: 0 };
const REASON = 'Customer not found in ERP';

const DESK = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };
const widths = [
  ['desk', DESK],
  ['phone', PHONE],
] as const;

before(async () => {
  if (skip) return;
  store = await testStore();
  tenant = await seedTenant(store, 'acme', {
    timeZone: 'Europe/Copenhagen',
    processes: [
      {
        processKey: 'orders',
        name: 'Orders',
        fields: [
          { name: 'OrderNo', label: 'Order no', type: 'text', required: true, isKey: true, unique: true },
          { name: 'Customer', label: 'Customer', type: 'text' },
          { name: 'Qty', label: 'Quantity', type: 'integer' },
          { name: 'Warehouse', label: 'Warehouse', type: 'text' },
          { name: 'Channel', label: 'Sales channel', type: 'text' },
        ],
      },
    ],
  });
  await seedUser(store, tenant.tenantId, 'anna', 'admin');
  await seedUser(store, tenant.tenantId, 'victor', 'viewer');
  await seedUser(store, tenant.tenantId, 'agnes.lindqvist-bergstrom', 'agent');
  ({ app, origin, browser } = await serve(store));

  mate = await Mate.signIn(app, tenant);
  root = await personWithToken(store, tenant.tenantId, 'admin', 'root');
  const list = (await asPerson(app, root, { method: 'GET', url: '/v1/processes' })).json().items;
  ordersId = list.find((p: { key: string }) => p.key === 'orders').id;
  failed.desk = await erred('B-20417');
  failed.phone = await erred('B-20418');
  for (let i = 0; i < 3; i++)
    await mate.create('orders', { OrderNo: `A-${1000 + i}`, Customer: 'Fjord Fish AS', Qty: i + 1, Warehouse: 'Aarhus', Channel: 'Web' });
});

after(async () => {
  if (skip) return;
  await browser?.close();
  await app?.close();
  await store?.close();
});

/** A task a Mate created, took (a history row from Ready to Ready) and handed back as Error. */
async function erred(orderNo: string): Promise<number> {
  const id = await mate.create('orders', { OrderNo: orderNo, Customer: 'Baltic Steel Trading Company', Qty: 7, Warehouse: 'Malmö' });
  const taken = await mate.takeNext('orders');
  assert.equal(taken.taskId, id);
  const r = await mate.post('/api/Error', { taskId: id, reason: REASON });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return id;
}

async function signedIn(viewport: { width: number; height: number }, path: string, username = 'anna') {
  const w = await openPage(browser, origin, viewport);
  await w.page.goto(path);
  await signIn(w.page, username);
  await w.page.waitForURL((u) => !u.pathname.startsWith('/sign-in'));
  return w;
}

/** The element's box lies within the viewport's width (a person sees it without scrolling sideways). */
async function inView(page: Page, el: Locator, what: string) {
  const box = (await el.boundingBox())!;
  assert.ok(box, `${what} is shown`);
  assert.ok(box.x >= 0 && box.x + box.width <= page.viewportSize()!.width + 0.5, `${what} lies within the width: ${JSON.stringify(box)}`);
}

test('overview: six-digit counts stay in their tiles, the card fills the page, each tile says what it counts', { skip }, async () => {
  for (const [name, viewport] of widths) {
    const w = await signedIn(viewport, '/');
    // the counts as a large tenant has them: the page draws what the API answers
    const big = { ready: 100_002, needsData: 123_456, needsApproval: 999_999, manual: 100_002, error: 100_002, solved: 654_321 };
    await w.page.route(/\/v1\/processes$/, async (route) => {
      const res = await route.fetch();
      const body = await res.json();
      for (const p of body.items) Object.assign(p.counts, big);
      await route.fulfill({ response: res, json: body });
    });
    await w.page.reload();
    const card = w.page.getByTestId('process-orders');
    await card.getByTestId('count-Ready').getByText('100,002').waitFor();
    for (const label of ['Ready', 'Needs data', 'Needs approval', 'Manual', 'Errors', 'Solved']) {
      const tile = card.getByTestId(`count-${label}`);
      const spill = await tile.evaluate((el) => {
        const t = el.getBoundingClientRect();
        const inner = [...el.querySelectorAll('p')].map((p) => p.getBoundingClientRect());
        return el.scrollWidth > el.clientWidth || inner.some((r) => r.left < t.left - 0.5 || r.right > t.right + 0.5);
      });
      assert.equal(spill, false, `${name}: the ${label} count stays in its tile`);
    }
    // the tiles' accessible names read as sentences
    await card.getByRole('link', { name: '100,002 Errors — tasks with an error in Orders', exact: true }).waitFor();
    await card.getByRole('link', { name: '100,002 Ready — tasks in Orders', exact: true }).waitFor();
    assert.equal(await card.getByRole('link', { name: /Errors tasks/ }).count(), 0);
    // the only process's card uses the page's width
    const widthsNow = await card.evaluate((el) => [el.getBoundingClientRect().width, el.parentElement!.getBoundingClientRect().width]);
    assert.ok(widthsNow[0] >= widthsNow[1] * 0.95, `${name}: the card is ${widthsNow[0]} px of ${widthsNow[1]} px`);
    if (viewport === PHONE) await fits(w.page, 'overview');
    await axe(w.page, `overview with large counts (${name})`);
    await shot(w.page, 'screens-overview');
    await done(w);
  }
});

test(
  'queue: the key names each row; a click on the row or the key opens the task; a phone shows key, status and reason',
  { skip },
  async () => {
    for (const [name, viewport] of widths) {
      const id = failed[name];
      const w = await signedIn(viewport, `/processes/${ordersId}/queue?queue=Manual&error=true`);
      const row = w.page.getByTestId(`row-${id}`);
      await row.waitFor();
      const orderNo = name === 'desk' ? 'B-20417' : 'B-20418';
      // what a person scans for is on the row, in view
      for (const text of [orderNo, 'Error', REASON]) await inView(w.page, row.getByText(text, { exact: true }).first(), `${name}: ${text}`);
      // the id is still there, but not the row's name
      assert.match((await row.textContent())!, new RegExp(String(id)));
      if (viewport === PHONE) await fits(w.page, 'queue');
      await axe(w.page, `queue (${name})`);
      await shot(w.page, 'screens-queue');

      // the key is a link to the task
      await row.getByRole('link', { name: orderNo, exact: true }).click();
      await w.page.waitForURL(new RegExp(`/tasks/${id}$`));
      await w.page.goBack();
      // so is the rest of the row (here its reason)
      await row.getByText(REASON).click();
      await w.page.waitForURL(new RegExp(`/tasks/${id}$`));
      await w.page.getByRole('heading', { level: 1, name: orderNo }).waitFor();
      await w.page.goBack();
      // the checkbox selects, it does not open
      if (viewport === DESK) {
        await row.getByRole('checkbox').click();
        await w.page.getByTestId('selection-bar').filter({ hasText: '1 selected' }).waitFor();
        assert.match(w.page.url(), /\/queue\?/);
      }
      await done(w);
    }
  },
);

test(
  "task: named by its key, id to copy; after a person's move the reason is the previous one; a phone has the actions first",
  { skip },
  async () => {
    for (const [name, viewport] of widths) {
      const id = failed[name];
      const orderNo = name === 'desk' ? 'B-20417' : 'B-20418';
      const w = await signedIn(viewport, `/tasks/${id}`);
      const { page } = w;
      await page.getByRole('heading', { level: 1, name: orderNo, exact: true }).waitFor();
      assert.match(await page.title(), new RegExp(`^${orderNo} `));
      await page.getByRole('navigation', { name: 'Breadcrumbs' }).getByText(orderNo, { exact: true }).waitFor();
      // the id is beside the name, with a button that copies it
      await page
        .getByTestId('task-id')
        .filter({ hasText: String(id) })
        .waitFor();
      await w.context.grantPermissions(['clipboard-read', 'clipboard-write']);
      await page.getByRole('button', { name: 'Copy the task id' }).click();
      assert.equal(await page.evaluate(() => navigator.clipboard.readText()), String(id));

      const reason = page.getByTestId('task-reason');
      assert.match((await reason.textContent())!, new RegExp(`^Reason${REASON}`));
      if (viewport === PHONE) {
        // the actions come before the fields, within the first screen
        const solve = page.getByRole('button', { name: 'Solve', exact: true });
        const box = (await solve.boundingBox())!;
        assert.ok(box.y + box.height <= PHONE.height, `Solve is on the first screen (y ${Math.round(box.y)})`);
        const fieldsBox = (await page.getByRole('heading', { name: 'Fields' }).boundingBox())!;
        assert.ok(box.y < fieldsBox.y, 'the actions come before the fields');
        await fits(page, 'task');
      }
      await axe(page, `task (${name})`);
      await shot(page, 'screens-task');

      // a take reads as a take: no "Ready → Ready"
      const history = page.getByTestId('task-history');
      await history.getByText('Taken by a Mate').waitFor();
      assert.doesNotMatch((await history.textContent())!, /Ready → Ready/);

      // a person moves the Error to Ready: the reason was the robot's, and reads as such
      await page.getByRole('textbox', { name: 'Move to' }).click();
      await page.getByRole('option', { name: 'Ready' }).click();
      await page.getByRole('button', { name: 'Move', exact: true }).click();
      await page.getByText(`${orderNo} moved to Ready.`).first().waitFor();
      await page.getByTestId('task-queue').filter({ hasText: 'Ready' }).waitFor();
      await reason.filter({ hasText: /^Previous reason/ }).waitFor();
      assert.match((await reason.textContent())!, new RegExp(REASON));
      assert.equal(await reason.getAttribute('data-current'), 'false');
      // the history keeps the Mate's reason on the row that gave it, and only there
      const rows = await history.getByText(`Reason: ${REASON}`).count();
      assert.equal(rows, 1, 'the reason shows on the hand-back that gave it');
      const stored = (await asPerson(app, root, { method: 'GET', url: `/v1/tasks/${id}` })).json();
      assert.equal(stored.queue, 'Ready');
      assert.equal(stored.error, false);
      if (viewport === PHONE) await fits(page, 'task after the move');
      await shot(page, 'screens-task-moved');
      await done(w);
    }
  },
);

test('users on a phone: each status whole and every button in view; the table on a desktop', { skip }, async () => {
  for (const [name, viewport] of widths) {
    const w = await signedIn(viewport, '/admin/users');
    const { page } = w;
    const victor = page.getByTestId('user-victor');
    await victor.waitFor();
    await inView(page, victor.getByText('Enabled', { exact: true }), `${name}: victor's status`);
    await inView(page, page.getByRole('button', { name: 'Disable victor' }), `${name}: Disable victor`);
    await inView(page, page.getByRole('button', { name: 'Reset password of victor' }), `${name}: Reset password of victor`);
    await inView(page, page.getByRole('textbox', { name: 'Role of victor' }), `${name}: the role of victor`);
    if (viewport === PHONE) await fits(page, 'users');
    else assert.equal(await page.getByRole('columnheader', { name: 'Last sign-in' }).count(), 1, 'a table on a desktop');
    await axe(page, `users (${name})`);
    await shot(page, 'screens-users');
    await done(w);
  }
});

test('import: the file picker is a button that says what to choose; problems name the field by its label', { skip }, async () => {
  for (const [name, viewport] of widths) {
    const w = await signedIn(viewport, `/processes/${ordersId}/import`);
    const { page } = w;
    const choose = page.getByRole('button', { name: 'Choose a CSV or XLSX file' });
    await choose.waitFor();
    await inView(page, choose, `${name}: the file button`);
    await page
      .locator('input[type="file"]')
      .setInputFiles({ name: `orders-${name}.csv`, mimeType: 'text/csv', buffer: Buffer.from('OrderNo,Qty\nC-1,2\nC-2,lots\n') });
    await page
      .getByTestId('import-file')
      .filter({ hasText: `orders-${name}.csv` })
      .waitFor();
    const errors = page.getByTestId('import-errors');
    await errors.waitFor();
    const cells = await errors.locator('tbody tr').first().locator('td').allTextContents();
    assert.deepEqual(cells.slice(0, 3), ['3', 'Quantity', 'lots']);
    assert.match(cells[3], /^Quantity: "lots" is not a whole number/);
    assert.doesNotMatch(cells[3], /Qty/);
    if (viewport === PHONE) await fits(page, 'import');
    await axe(page, `import (${name})`);
    await shot(page, 'screens-import');
    await page.getByRole('button', { name: 'Clear the file' }).click();
    await page.getByTestId('import-errors').waitFor({ state: 'detached' });
    await done(w);
  }
});

test('a new task is announced by its key, and its page is named by it', { skip }, async () => {
  const w = await signedIn(DESK, `/processes/${ordersId}/new`);
  const { page } = w;
  await page.getByLabel('Order no').fill('N-77');
  await page.getByRole('button', { name: 'Create task' }).click();
  await page.getByText('N-77 created in Ready.').first().waitFor();
  await page.getByRole('heading', { level: 1, name: 'N-77', exact: true }).waitFor();
  await done(w);
});
