// The operator console end to end, in a real browser: bootstrap login, forced password change,
// a project, codes generated as a batch with live progress, search, disable, export, a verify through the client API and its
// log, a manual reactivate in the audit log, a viewer without change controls. Every page is
// screenshotted and checked by axe-core (no serious or critical violation).
const { test, expect } = require('@playwright/test');
const AxeBuilder = require('@axe-core/playwright').default;
const fs = require('fs');
const path = require('path');

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the suite through go test (TestConsoleInBrowser)`);
  return v;
};
const artifacts = env('ARTIFACTS');
const codeCount = Number(env('CODE_COUNT'));
const countText = codeCount.toLocaleString('en-US');
const newPassword = 'a long passphrase for e2e';

// Nothing leaves the machine: every request to anything but the console on 127.0.0.1 fails.
async function loopbackOnly(context) {
  await context.route('**/*', (route) => {
    const u = new URL(route.request().url());
    return u.hostname === '127.0.0.1' ? route.continue() : route.abort();
  });
}

// nav is an entry of the main navigation; tab a tab of the project page.
const nav = (page, name) => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true });
const tab = (page, name) => page.getByRole('navigation', { name: 'Project sections' }).getByRole('link', { name, exact: true });

let shot = 0;
// snap saves a screenshot of the page and checks it with axe-core.
async function snap(page, name) {
  shot += 1;
  await page.screenshot({ path: path.join(artifacts, `${String(shot).padStart(2, '0')}-${name}.png`), fullPage: true });
  const res = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze();
  const bad = res.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  fs.writeFileSync(path.join(artifacts, `${String(shot).padStart(2, '0')}-${name}.axe.json`), JSON.stringify(res.violations, null, 2));
  expect(bad.map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`),
    `axe on ${name}`).toEqual([]);
}

// firstLogin logs in with a one-time password and replaces it, as the server demands.
async function firstLogin(page, user, otp) {
  await page.goto('/');
  await expect(page).toHaveURL(/\/login$/);
  await page.getByLabel('Username').fill(user);
  await page.getByLabel('Password').fill(otp);
  await page.getByRole('button', { name: 'Log in' }).click();
  await expect(page).toHaveURL(/\/password$/);
  await expect(page.getByRole('heading', { name: 'Change your password' })).toBeVisible();
  return async (name) => {
    if (name) await snap(page, name);
    await page.getByLabel('Current password').fill(otp);
    await page.getByLabel('New password', { exact: true }).fill(newPassword);
    await page.getByLabel('New password again').fill(newPassword);
    await page.getByRole('button', { name: 'Change password' }).click();
    await expect(page.locator('p.flash')).toContainText('Password changed');
  };
}

test('operator console end to end', async ({ browser }) => {
  const context = await browser.newContext();
  await loopbackOnly(context);
  const page = await context.newPage();
  let projectURL, projectID, disabledCode, verifiedCode;

  await test.step('log in with the bootstrap password and change it', async () => {
    await page.goto('/login');
    await snap(page, 'login');
    // A wrong password is refused on the page.
    await page.getByLabel('Username').fill(env('ROOT_USER'));
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Log in' }).click();
    await expect(page.getByRole('alert')).toContainText('Invalid username or password');
    const change = await firstLogin(page, env('ROOT_USER'), env('ROOT_OTP'));
    await change('password-change');
    await expect(page.getByRole('heading', { name: 'Dashboard' })).toBeVisible();
  });

  await test.step('create a project', async () => {
    await nav(page, 'Projects').click();
    await page.getByLabel('Name').fill('Spring campaign');
    await page.getByLabel('Description').fill('Codes printed on the spring packs');
    await page.getByRole('button', { name: 'Create project' }).click();
    await expect(page.locator('p.flash')).toHaveText('Project created.');
    await expect(page.getByRole('heading', { level: 1 })).toHaveText('Spring campaign');
    projectURL = page.url().split('?')[0];
    projectID = new URL(projectURL).pathname.split('/')[2];
  });

  await test.step(`generate ${codeCount} codes as a batch with live progress`, async () => {
    await tab(page, 'Batches').click();
    await expect(page).toHaveURL(/\?tab=batches$/);
    await expect(tab(page, 'Batches')).toHaveAttribute('aria-current', 'page');
    await page.getByLabel('Batch name').fill('Spring packs');
    await page.getByLabel('How many').fill(String(codeCount));
    const started = Date.now();
    await page.getByRole('button', { name: 'Generate' }).click();
    // The request answers at once; the batch runs in the background and its progress bar,
    // polled from the admin API, moves until the page reloads with the result.
    await expect(page.locator('p.flash')).toHaveText('Generation started; its progress is shown below.');
    const bar = page.getByRole('progressbar', { name: 'Progress of batch Spring packs' });
    await expect(bar).toBeVisible();
    await expect(bar).toHaveAttribute('max', String(codeCount));
    await expect(page.locator('p.flash'))
      .toHaveText(`Codes generated: ${countText}.`, { timeout: 10 * 60 * 1000 });
    console.log(`generated ${codeCount} codes in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    await expect(bar).toHaveAttribute('value', String(codeCount));
    const row = page.locator('tr[data-batch]').filter({ hasText: 'Spring packs' });
    await expect(row.locator('[data-batch-status]')).toHaveText('done');
    await expect(row.getByRole('link', { name: 'Revoke batch Spring packs' })).toBeVisible();
    await expect(page.locator('[data-stat="total"]')).toHaveText(countText);
    await snap(page, 'project-batches');
    // Revoking the batch, and disabling in bulk, show the count and what stops before the
    // confirm button, which needs the project's name typed: a wrong name is refused as an
    // error and disables nothing.
    await row.getByRole('link', { name: 'Revoke batch Spring packs' }).click();
    await expect(page.getByRole('heading', { level: 1 })).toHaveText('Revoke batch Spring packs');
    await expect(page.locator('#bulk-count')).toContainText(`${countText} codes are enabled and will be disabled`);
    await expect(page.locator('#bulk-form .stops')).toContainText('refused with CODE_DISABLED');
    await expect(page.getByRole('button', { name: `Revoke batch: disable ${countText} codes` })).toBeVisible();
    await snap(page, 'batch-revoke-confirm');
    await page.getByRole('button', { name: `Revoke batch: disable ${countText} codes` }).click();
    await expect(page.locator('#bulk-form')).toBeVisible(); // the browser asks for the name first
    await page.getByLabel(/Type the project's name/).fill('Spring campaig');
    await page.getByRole('button', { name: `Revoke batch: disable ${countText} codes` }).click();
    await expect(page.getByRole('alert')).toContainText('The name typed does not match the project\'s name');
    await expect(page.locator('p.flash')).toHaveCount(0);
    await snap(page, 'typed-confirmation-refused');
    await page.goto(`${projectURL}?tab=batches`);
    await expect(page.locator('tr[data-batch]').filter({ hasText: 'Spring packs' })).not.toContainText('revoked');
    await expect(page.locator('[data-stat="disabled"]')).toHaveText('0');
    await page.goto(`${projectURL}?tab=codes`);
    await page.locator('#bulk_status').selectOption('unused');
    await page.getByRole('button', { name: 'Count codes to disable' }).click();
    await expect(page.getByRole('heading', { level: 1 })).toHaveText('Disable codes in bulk');
    await expect(page.getByRole('button', { name: `Disable ${countText} codes` })).toBeVisible();
    await snap(page, 'bulk-disable-confirm');
    await page.goto(`${projectURL}?tab=codes`);
    await expect(page.locator('.pager [data-pager]')).toHaveText(`1–50 of ${countText} · Page 1 of ${Math.ceil(codeCount / 50).toLocaleString('en-US')}`);
    await page.locator('.pager').getByRole('link', { name: 'Next' }).click();
    await expect(page.locator('.pager [data-pager]')).toContainText('51–100 of');
    await page.locator('.pager').getByRole('link', { name: 'Previous' }).click();
    await expect(page.locator('.pager [data-pager]')).toContainText('1–50 of');
    await expect(page.locator('.pager').getByRole('link', { name: 'Previous' })).toHaveCount(0);
  });

  await test.step('search one code and disable it', async () => {
    const links = page.locator('table a.mono');
    disabledCode = (await links.nth(0).textContent()).trim();
    verifiedCode = (await links.nth(1).textContent()).trim();
    await page.getByLabel('Search').fill(disabledCode);
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect(page.locator('#codes-count')).toHaveText('1 code matches');
    await page.getByRole('link', { name: disabledCode }).click();
    await expect(page.getByRole('heading', { level: 1 })).toContainText(disabledCode);
    await expect(page.locator('#code-state')).toHaveText('unused');
    await page.getByRole('button', { name: 'Disable code' }).click();
    await expect(page.locator('p.flash')).toHaveText('Code disabled.');
    await expect(page.locator('#code-state')).toHaveText('disabled');
    await snap(page, 'code-disabled');
  });

  await test.step('export every code', async () => {
    await page.goto(`${projectURL}?tab=settings`);
    const [download] = await Promise.all([
      page.waitForEvent('download', { timeout: 5 * 60 * 1000 }),
      page.getByRole('link', { name: 'Export all codes (CSV)' }).click(),
    ]);
    const file = path.join(artifacts, 'export.csv');
    await download.saveAs(file);
    const lines = fs.readFileSync(file, 'utf8').split('\n').filter((l) => l !== '');
    const header = lines[0].split(',');
    const col = header.indexOf('code');
    expect(col, `CSV header ${lines[0]}`).toBeGreaterThanOrEqual(0);
    const codes = new Set(lines.slice(1).map((l) => l.split(',')[col]));
    expect(lines.length - 1).toBe(codeCount);
    expect(codes.size).toBe(codeCount);
    expect(codes.has(disabledCode)).toBe(true);
    expect(codes.has(verifiedCode)).toBe(true);
  });

  await test.step('verify a code through the client API and see its log', async () => {
    await tab(page, 'API keys').click();
    await page.getByRole('button', { name: 'Create API key' }).click();
    const box = page.locator('[data-key-id]');
    await expect(box).toContainText('shown this once');
    const keyID = await box.getAttribute('data-key-id');
    const secret = await page.getByLabel('Secret').inputValue();
    await snap(page, 'api-key-created');
    const res = await fetch(env('HELPER_URL'), {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ KeyID: keyID, Secret: secret, ProjectID: projectID, Code: verifiedCode }),
    });
    const body = await res.json();
    expect(body.success, JSON.stringify(body)).toBe(true);
    // And one refused: the disabled code.
    const refusedRes = await fetch(env('HELPER_URL'), {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ KeyID: keyID, Secret: secret, ProjectID: projectID, Code: disabledCode }),
    });
    expect((await refusedRes.json()).error_code).toBe('CODE_DISABLED');
    // The log reaches PostgreSQL through the pipeline: reload until the code page shows it.
    const codeURL = `${projectURL}/code?value=${encodeURIComponent(verifiedCode)}`;
    await expect(async () => {
      await page.goto(codeURL);
      await expect(page.locator('#history')).toContainText('checkout-e2e', { timeout: 1000 });
    }).toPass({ timeout: 60 * 1000 });
    await expect(page.locator('#code-state')).toHaveText('used');
    await snap(page, 'code-verified');
  });

  await test.step('find the verification in the logs page, and the key’s last use', async () => {
    await nav(page, 'Verification logs').click();
    await expect(page.locator('#logs tbody tr').filter({ hasText: verifiedCode })).toContainText('checkout-e2e');
    // The project is shown by its name, its id on hover.
    await expect(page.locator('#logs tbody tr').filter({ hasText: verifiedCode }).getByRole('link', { name: 'Spring campaign' }))
      .toHaveAttribute('title', `Project ID ${projectID}`);
    await page.getByLabel('Project', { exact: true }).selectOption({ label: 'Spring campaign' });
    await page.getByLabel('Code (needs project)').fill(verifiedCode);
    await page.getByLabel('Result').selectOption('success');
    await page.getByRole('button', { name: 'Search' }).click();
    const rows = page.locator('#logs tbody tr');
    await expect(rows).toHaveCount(1);
    await expect(rows.first()).toContainText('checkout-e2e');
    await expect(page.getByRole('link', { name: 'Download every matching log as CSV' })).toHaveAttribute('href', new RegExp(projectID));
    await snap(page, 'logs');
    // The API process flushes its keys' last use every 10 s.
    await expect(async () => {
      await page.goto(`${projectURL}?tab=keys`);
      await expect(page.locator('td.last-used').first()).not.toHaveText('never', { timeout: 1000 });
    }).toPass({ timeout: 40 * 1000 });
    await page.goto(`${projectURL}/code?value=${encodeURIComponent(verifiedCode)}`);
  });

  await test.step('reactivate it by hand with a reason and find that in the audit log', async () => {
    const reason = 'Customer order 4711 was cancelled';
    await page.getByLabel('Reason for reactivating by hand').fill(reason);
    await page.getByRole('button', { name: 'Reactivate by hand' }).click();
    await expect(page.locator('p.flash')).toContainText('Code reactivated by hand');
    await expect(page.locator('#code-state')).toHaveText('unused');
    await nav(page, 'Audit log').click();
    await expect(page.locator('#chain-result')).toHaveAttribute('data-ok', 'true');
    const row = page.locator('#audit tbody tr').filter({ hasText: 'code.manual_reactivate' });
    await expect(row).toContainText(verifiedCode);
    await expect(row).toContainText(reason);
    await expect(row).toContainText(env('ROOT_USER'));
    await expect(page.locator('#audit tbody tr').filter({ hasText: 'code.disable' })).toContainText(disabledCode);
    await expect(page.locator('#audit tbody tr').filter({ hasText: 'codes.export' })).toHaveCount(1);
    await expect(page.getByRole('link', { name: 'Download every matching entry as CSV' })).toBeVisible();
    // What changed reads as before → after, not as JSON.
    await expect(page.locator('#audit tbody tr').filter({ hasText: 'code.disable' }).locator('.changes'))
      .toHaveText(/state: enabled → disabled/);
    await expect(page.locator('#audit')).not.toContainText('{"');
    await snap(page, 'audit');
  });

  await test.step('check an import file, see its row errors, import it; set and clear the expiry', async () => {
    await nav(page, 'Projects').click();
    await page.getByLabel('Name').fill('Import check');
    await page.getByRole('button', { name: 'Create project' }).click();
    await expect(page.locator('p.flash')).toHaveText('Project created.');
    await tab(page, 'Codes').click();
    const file = { name: 'codes.csv', mimeType: 'text/csv',
      buffer: Buffer.from('code,expires_at\nIMP-1,\nIMP-2,next tuesday\nIMP-1,\nIMP-3,\n') };
    await page.getByLabel('CSV file').setInputFiles(file);
    await page.getByRole('button', { name: 'Check file (dry run)' }).click();
    const report = page.locator('#import-report');
    await expect(report).toContainText('Dry run: nothing was written.');
    await expect(report).toContainText('2 new codes would be imported');
    const errors = page.locator('#import-errors tbody tr');
    await expect(errors).toHaveCount(2);
    await expect(errors.nth(0)).toContainText('3');
    await expect(errors.nth(0)).toContainText('IMP-2');
    await expect(errors.nth(0)).toContainText('invalid');
    await expect(errors.nth(1)).toContainText('duplicate');
    await expect(page.locator('[data-stat="total"]')).toHaveText('0');
    await snap(page, 'import-dry-run');
    await page.getByLabel('CSV file').setInputFiles(file);
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    await expect(report).toContainText('Import done.');
    await expect(page.locator('[data-stat="total"]')).toHaveText('2');

    await tab(page, 'Settings').click();
    await page.getByLabel('Expires at (UTC)').fill('2031-02-03T04:05');
    await page.getByRole('button', { name: 'Set expiry' }).click();
    // The confirmation box is required: nothing is sent until it is ticked.
    await expect(page.locator('p.flash')).toHaveCount(0);
    await page.getByLabel(/stop verifying then/).check();
    await page.getByRole('button', { name: 'Set expiry' }).click();
    await expect(page.locator('p.flash')).toHaveText('Project expiry set.');
    await expect(page.locator('p.meta').first()).toContainText('Expires 2031-02-03 04:05:00 UTC');
    await snap(page, 'project-expiry');
    await page.getByLabel(/then never expire/).check();
    await page.getByRole('button', { name: 'Clear expiry' }).click();
    await expect(page.locator('p.flash')).toHaveText('Project expiry cleared.');

    // Disabling the project says what stops and needs its name typed.
    await expect(page.locator('#project-status')).toHaveText('Active');
    await expect(page.locator('#project-state .stops')).toContainText('PROJECT_DISABLED');
    await page.getByLabel(/Type the project's name/).fill('import check');
    await page.getByRole('button', { name: 'Disable project' }).click();
    await expect(page.getByRole('alert')).toContainText('does not match');
    await page.goBack();
    await page.getByLabel(/Type the project's name/).fill('Import check');
    await page.getByRole('button', { name: 'Disable project' }).click();
    await expect(page.locator('p.flash')).toHaveText('Project disabled.');
    await expect(page.locator('#project-status')).toHaveText('Disabled');
    await snap(page, 'project-disabled');
  });

  await test.step('a refused action shows as an error, not a success', async () => {
    await page.goto(`${projectURL}/code?value=${encodeURIComponent(disabledCode)}`);
    await page.getByLabel('Reason for verifying by hand').fill('Customer insists');
    await page.getByRole('button', { name: 'Verify by hand' }).click();
    await expect(page.getByRole('alert')).toContainText('The code was not verified: CODE_DISABLED.');
    await expect(page.locator('p.error')).toBeVisible();
    await expect(page.locator('p.flash')).toHaveCount(0);
    await snap(page, 'refused-action-error');
  });

  await test.step('charts: axes, tooltips, a table, and a time range switch', async () => {
    // One verify succeeded (the client API's) and two were refused (the client API's and the
    // one by hand of the disabled code); the counts reach PostgreSQL through the pipeline.
    await expect(async () => {
      await page.goto(projectURL);
      await expect(page.locator('[data-stat="refused"]')).toHaveText('2', { timeout: 1000 });
    }).toPass({ timeout: 60 * 1000 });
    await expect(tab(page, 'Overview')).toHaveAttribute('aria-current', 'page');
    await expect(page.locator('[data-stat="verifies"]')).toHaveText('1');
    const chart = page.locator('#redemptions-chart');
    await expect(chart).toHaveAttribute('role', 'img');
    await expect(chart.locator('title').first()).toContainText('Verifies per hour over the last 24 h');
    expect(await chart.locator('g > title').filter({ hasText: /UTC: 1 successful/ }).count()).toBe(1);
    // The bar of one verify is drawn, and lower than the axis's top.
    const h = Number(await chart.locator('rect.bar-ok:not([height="0"])').first().getAttribute('height'));
    expect(h).toBeGreaterThan(0);
    await expect(page.locator('#redemptions-table tbody tr')).toHaveCount(24);
    const range = page.getByRole('navigation', { name: 'Time range' });
    await expect(range.getByRole('link', { name: '24 h' })).toHaveAttribute('aria-current', 'true');
    await range.getByRole('link', { name: '7 d' }).click();
    await expect(page).toHaveURL(/range=7d/);
    await expect(range.getByRole('link', { name: '7 d' })).toHaveAttribute('aria-current', 'true');
    await expect(page.locator('#redemptions-table tbody tr')).toHaveCount(28);
    await expect(page.locator('[data-stat="verifies"]')).toHaveText('1');
    await snap(page, 'project-overview-7d');
    await range.getByRole('link', { name: '30 d' }).click();
    await expect(page.locator('#redemptions-table tbody tr')).toHaveCount(30);
    await range.getByRole('link', { name: '1 h' }).click();
    await expect(page.locator('#redemptions-table tbody tr')).toHaveCount(1);
    await nav(page, 'Dashboard').click();
    await expect(nav(page, 'Dashboard')).toHaveAttribute('aria-current', 'page');
    await expect(page.locator('[data-total="success"]')).toHaveText('1');
    await expect(page.locator('[data-total="refused"]')).toHaveText('2');
  });

  await test.step('docs page and the client API guide', async () => {
    await nav(page, 'Docs').click();
    await expect(page.getByRole('heading', { level: 1 })).toHaveText('Documentation');
    await snap(page, 'docs');
    const admin = await page.request.get(await page.getByRole('link', { name: 'Admin API OpenAPI document' }).getAttribute('href'));
    expect(admin.status()).toBe(200);
    expect(await admin.text()).toContain('title: acv admin API');
    await page.getByRole('link', { name: 'Signing guide' }).click();
    await expect(page.locator('#authentication')).toBeVisible();
    await expect(page.locator('#the-string-to-sign')).toBeVisible();
    await snap(page, 'api-guide');
  });

  await test.step('dashboard, projects and accounts pages', async () => {
    await nav(page, 'Dashboard').click();
    await expect(page.getByRole('row', { name: /Spring campaign/ })).toContainText(countText);
    await snap(page, 'dashboard');
    await nav(page, 'Projects').click();
    await snap(page, 'projects');
    await nav(page, 'Accounts').click();
    await expect(page.getByRole('row', { name: /vera/ })).toContainText('viewer');
    await snap(page, 'accounts');
    await nav(page, 'Batches').click();
    await expect(page.locator('#all-batches')).toContainText('Spring packs');
    await expect(page.locator('#all-batches')).toContainText('Spring campaign');
    await snap(page, 'batches');

    // Every page at a laptop's width and a phone's, then in dark mode.
    const code = `${projectURL}/code?value=${encodeURIComponent(verifiedCode)}`;
    const batchID = await (async () => {
      await page.goto(`${projectURL}?tab=batches`);
      return page.locator('tr[data-batch]').first().getAttribute('data-batch');
    })();
    const pages = [
      ['dashboard', '/'], ['projects', '/projects'], ['project-overview', projectURL],
      ['project-codes', `${projectURL}?tab=codes`], ['project-keys', `${projectURL}?tab=keys`],
      ['project-batches', `${projectURL}?tab=batches`], ['project-settings', `${projectURL}?tab=settings`],
      ['code', code], ['bulk-disable', `${projectURL}/bulk-disable?status=unused`],
      ['batch-revoke', `${projectURL}/bulk-disable?batch_id=${batchID}`], ['batches', '/batches'],
      ['logs', '/logs'], ['audit', '/audit'], ['accounts', '/accounts'], ['tokens', '/tokens'], ['docs', '/docs'], ['api-guide', '/docs/api'],
    ];
    for (const width of [1366, 420]) {
      await page.setViewportSize({ width, height: width > 1000 ? 900 : 900 });
      for (const [name, url] of pages) {
        await page.goto(url);
        // Nothing is wider than the screen: wide tables scroll inside their own box.
        const overflow = await page.evaluate(() => {
          const w = document.documentElement.clientWidth;
          if (document.documentElement.scrollWidth <= w) return [];
          return [...document.querySelectorAll('body *')]
            .filter((el) => !el.parentElement.closest('pre, .scroll') && el.getBoundingClientRect().right > w + 1)
            .map((el) => `${el.tagName.toLowerCase()}.${el.className} right=${Math.round(el.getBoundingClientRect().right)}`)
            .slice(-10);
        });
        expect(overflow, `elements wider than a ${width} px screen on ${name}`).toEqual([]);
        await snap(page, `${name}-${width}`);
      }
    }
    // On a phone the sidebar becomes a strip above the page, the current page marked.
    await page.goto('/logs');
    const side = page.getByRole('navigation', { name: 'Main' });
    const box = await side.boundingBox();
    expect(box.width).toBeLessThanOrEqual(420);
    await expect(nav(page, 'Verification logs')).toHaveAttribute('aria-current', 'page');
    // Dark mode follows the system's colour scheme; axe checks its contrast.
    await page.emulateMedia({ colorScheme: 'dark' });
    for (const width of [1366, 420]) {
      await page.setViewportSize({ width, height: 900 });
      for (const [name, url] of [['dashboard', '/'], ['project-overview', projectURL], ['project-codes', `${projectURL}?tab=codes`],
        ['project-settings', `${projectURL}?tab=settings`], ['audit', '/audit'], ['logs', '/logs']]) {
        await page.goto(url);
        const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
        expect(bg, 'dark background').toBe('rgb(15, 17, 21)');
        await snap(page, `dark-${name}-${width}`);
      }
    }
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize({ width: 1366, height: 900 });
    await page.getByRole('button', { name: 'Log out' }).click();
    await expect(page).toHaveURL(/\/login$/);
  });

  await test.step('a viewer sees no change controls and is refused every change', async () => {
    const vctx = await browser.newContext();
    await loopbackOnly(vctx);
    const vp = await vctx.newPage();
    const change = await firstLogin(vp, env('VIEWER_USER'), env('VIEWER_OTP'));
    await change();
    await expect(nav(vp, 'Accounts')).toHaveCount(0);
    for (const url of [projectURL, `${projectURL}?tab=codes`, `${projectURL}?tab=keys`, `${projectURL}?tab=batches`,
      `${projectURL}?tab=settings`, `${projectURL}/code?value=${encodeURIComponent(verifiedCode)}`, '/projects', '/', '/logs', '/audit', '/batches']) {
      await vp.goto(url);
      await expect(vp.locator('form[method="post"]:not([action="/logout"])'), `change forms on ${url}`).toHaveCount(0);
    }
    await vp.goto(`${projectURL}?tab=settings`);
    await expect(vp.getByRole('link', { name: 'Export all codes (CSV)' })).toHaveCount(0);
    await expect(vp.getByRole('button', { name: 'Disable project' })).toHaveCount(0);
    await vp.goto(`${projectURL}?tab=codes`);
    await expect(vp.getByRole('button', { name: 'Count codes to disable' })).toHaveCount(0);
    await vp.goto(`${projectURL}?tab=batches`);
    await expect(vp.getByRole('button', { name: 'Generate' })).toHaveCount(0);
    await expect(vp.getByRole('link', { name: /Revoke batch/ })).toHaveCount(0);
    // The viewer sees the batch and its progress, without its controls.
    const batchRow = vp.locator('tr[data-batch]').filter({ hasText: 'Spring packs' });
    await expect(batchRow.getByRole('progressbar')).toHaveAttribute('value', String(codeCount));
    const batchID = await batchRow.getAttribute('data-batch');
    await vp.goto('/logs');
    await expect(vp.locator('#logs tbody tr').filter({ hasText: verifiedCode }).first()).toBeVisible();
    await expect(vp.getByRole('link', { name: 'Download every matching log as CSV' })).toHaveCount(0);
    await snap(vp, 'project-viewer');
    // The server refuses what the page does not offer: a form post and the JSON API, each with
    // the session's CSRF token.
    // (The console's Content-Security-Policy lets a page's script fetch only from the console,
    // and its script only reads; these go through the context's request client, which sends
    // the same session cookie.)
    const rq = vp.request;
    const me = await (await rq.get('/admin/api/v1/me')).json();
    const refused = [
      (await rq.post(`/projects/${projectID}/generate`, { form: { csrf_token: me.csrf_token, count: '5' }, maxRedirects: 0 })).status(),
      (await rq.post(`/admin/api/v1/projects/${projectID}/codes/${encodeURIComponent(verifiedCode)}/disable`,
        { headers: { 'X-CSRF-Token': me.csrf_token } })).status(),
      (await rq.get(`/projects/${projectID}/export`, { maxRedirects: 0 })).status(),
      (await rq.get('/accounts', { maxRedirects: 0 })).status(),
      (await rq.post(`/admin/api/v1/projects/${projectID}/generate`,
        { headers: { 'X-CSRF-Token': me.csrf_token }, data: { name: 'viewer batch', count: 5 } })).status(),
      (await rq.post(`/admin/api/v1/projects/${projectID}/batches/${batchID}/revoke`,
        { headers: { 'X-CSRF-Token': me.csrf_token }, data: {} })).status(),
      (await rq.post(`/admin/api/v1/projects/${projectID}/batches/${batchID}/cancel`,
        { headers: { 'X-CSRF-Token': me.csrf_token } })).status(),
      (await rq.get(`/admin/api/v1/projects/${projectID}/bulk-disable?status=unused`)).status(),
      (await rq.post(`/admin/api/v1/projects/${projectID}/bulk-disable`,
        { headers: { 'X-CSRF-Token': me.csrf_token }, data: { status: 'unused', expected_count: 1 } })).status(),
      (await rq.post(`/projects/${projectID}/batches/${batchID}/revoke`,
        { form: { csrf_token: me.csrf_token, expected_count: String(codeCount) }, maxRedirects: 0 })).status(),
    ];
    expect(refused).toEqual([403, 403, 403, 403, 403, 403, 403, 403, 403, 403]);
    // The batch is as it was: nothing a viewer sent changed it.
    const batch = await (await rq.get(`/admin/api/v1/projects/${projectID}/batches/${batchID}`)).json();
    expect([batch.status, batch.done, batch.revoked_at]).toEqual(['done', codeCount, null]);
    await vctx.close();
  });

  await context.close();
});
