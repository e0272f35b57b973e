// Browser test of the status page, run by
// e2e/statuspage_e2e_test.go against a real host serving
// the example plugins calculator and mock with the API key API_KEY.
//
// Environment:
//   BASE_URL    the host, http://127.0.0.1:PORT (required)
//   API_KEY     the key the page must ask for (required)
//   OUT_DIR     where the screenshot goes (required)
//   SCREENSHOT  also write the screenshot there (docs/status-page.png)
//   CHROMIUM    the browser (default /usr/bin/chromium)
//
// It prints one line per step, "step NAME ms", and exits 1 with the
// reason at the first failure.
'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { chromium } = require('playwright-core');

const base = process.env.BASE_URL;
const key = process.env.API_KEY;
const outDir = process.env.OUT_DIR;
if (!base || !key || !outDir) {
  console.error('BASE_URL, API_KEY and OUT_DIR are required');
  process.exit(2);
}
const STEP_MS = 10000; // longest wait of one step

const t0 = Date.now();
let last = t0;
function step(name, extra) {
  const now = Date.now();
  console.log(`step ${name} ${now - last} ms${extra ? ' ' + extra : ''}`);
  last = now;
}

function fail(msg) {
  throw new Error(msg);
}

async function main() {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'statuspage-chromium-'));
  const ctx = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run'],
    viewport: { width: 1440, height: 900 },
    timeout: 30000,
  });
  const problems = [];
  try {
    const page = ctx.pages()[0] || (await ctx.newPage());
    page.setDefaultTimeout(STEP_MS);
    page.on('pageerror', (e) => problems.push('page error: ' + e.message));
    page.on('console', (m) => {
      // A 401 is the page's way to learn it needs a key; anything else
      // (a CSP violation, a script error) is a failure.
      if (m.type() === 'error' && !/status of 401/.test(m.text())) problems.push('console: ' + m.text());
    });
    step('browser');

    // 1. The page opens without a key and asks for one.
    const resp = await page.goto(base + '/');
    if (!resp || resp.status() !== 200) fail('GET / answered ' + (resp && resp.status()));
    const csp = resp.headers()['content-security-policy'] || '';
    if (!csp.includes("default-src 'self'")) fail('no Content-Security-Policy: ' + csp);
    await page.locator('#key-dialog[open]').waitFor();
    await page.fill('#key-input', key);
    await page.click('#key-ok');
    step('key-prompt');
    const kept = await page.evaluate(() => sessionStorage.getItem('opentool-host.apiKey'));
    if (kept !== key) fail('the key is not in sessionStorage: ' + kept);
    const inLocal = await page.evaluate(() => localStorage.length);
    if (inLocal !== 0) fail('localStorage holds ' + inLocal + ' items');

    // 2. Every plugin is listed, ready, and the event stream is live.
    for (const name of ['calculator', 'mock']) {
      await page.locator(`#plugins tr[data-plugin="${name}"][data-state="ready"]`).waitFor();
    }
    await page.locator('#live[data-live="yes"]').waitFor();
    await page.locator('#functions tr[data-fn="add"]').waitFor();
    step('plugins-listed');

    // 3. A killed plugin's restart shows up live, from /events.
    const row = page.locator('#plugins tr[data-plugin="calculator"]');
    const pid = Number(await row.getAttribute('data-pid'));
    const restarts = Number(await row.getAttribute('data-restarts'));
    if (!(pid > 0)) fail('calculator shows no pid');
    const killedAt = Date.now();
    process.kill(pid, 'SIGKILL');
    await page.locator('#events li[data-type="restarting"][data-plugin="calculator"]').waitFor();
    const sawCrash = Date.now() - killedAt;
    await page.locator('#events li[data-type="ready"][data-plugin="calculator"]').waitFor();
    await page.locator(`#plugins tr[data-plugin="calculator"][data-state="ready"][data-restarts="${restarts + 1}"]`).waitFor();
    const newPid = Number(await row.getAttribute('data-pid'));
    if (!(newPid > 0) || newPid === pid) fail(`calculator's pid after the restart: ${newPid} (was ${pid})`);
    step('restart-live', `(crash event after ${sawCrash} ms, restarted row after ${Date.now() - killedAt} ms)`);

    // 4. "try it" on add: 2 + 3 = 5.
    const add = page.locator('#functions tr[data-fn="add"]');
    await add.locator('button').click();
    const addForm = page.locator('form.try-form[data-fn="add"]');
    await addForm.locator('input[name="a"]').fill('2');
    await addForm.locator('input[name="b"]').fill('3');
    if ((await addForm.locator('label .req').count()) < 2) fail('a and b are not marked required');
    await addForm.locator('button[type="submit"]').click();
    const addOut = addForm.locator('pre.result.ok');
    await addOut.waitFor();
    const addText = await addOut.textContent();
    let addResult;
    try {
      addResult = JSON.parse(addText);
    } catch (e) {
      fail('add result is not JSON: ' + addText);
    }
    if (addResult.result !== 5) fail('add(2, 3) shows ' + addText);
    step('try-add', '= ' + addResult.result);

    // 5. A tool error is shown as an error.
    await page.locator('#functions tr[data-fn="divide"] button').click();
    const div = page.locator('form.try-form[data-fn="divide"]');
    await div.locator('input[name="a"]').fill('1');
    await div.locator('input[name="b"]').fill('0');
    await div.locator('button[type="submit"]').click();
    const divOut = div.locator('pre.result.fail');
    await divOut.waitFor();
    if (!/division by zero/.test(await divOut.textContent())) fail('divide by 0 shows ' + (await divOut.textContent()));
    step('try-error');

    // 6. Plugin output is text, never markup: mock stores a string and
    // read returns it.
    const evil = '<img id="pwned" src="x" onerror="document.title=\'pwned\'">';
    await page.locator('#functions tr[data-fn="create"] button').click();
    const create = page.locator('form.try-form[data-fn="create"]');
    await create.locator('[name="text"]').fill(evil);
    await create.locator('button[type="submit"]').click();
    await create.locator('pre.result.ok').waitFor();
    const created = JSON.parse(await create.locator('pre.result.ok').textContent());
    await page.locator('#functions tr[data-fn="read"] button').click();
    const read = page.locator('form.try-form[data-fn="read"]');
    await read.locator('[name="id"]').fill(String(created.id));
    await read.locator('button[type="submit"]').click();
    await read.locator('pre.result.ok').waitFor();
    const readText = await read.locator('pre.result.ok').textContent();
    if (JSON.parse(readText).text !== evil) fail('read shows ' + readText);
    if ((await page.locator('#pwned').count()) !== 0 || (await page.title()) === 'pwned') fail('plugin output became markup');
    step('escaping');
    // Close the mock forms, keep add's and divide's for the picture.
    await page.locator('#functions tr[data-fn="create"] button').click();
    await page.locator('#functions tr[data-fn="read"] button').click();

    // 7. With metrics, the calls show up in the function table.
    const metrics = await page.evaluate(async (k) => {
      const r = await fetch('/status.json', { headers: { Authorization: 'Bearer ' + k } });
      return (await r.json()).metrics;
    }, key);
    if (metrics && process.env.SCREENSHOT) {
      // Some traffic for the picture: calls per second and an error rate.
      await page.evaluate(async (k) => {
        const call = (method, params) => fetch('/opentool/call', {
          method: 'POST',
          headers: { Authorization: 'Bearer ' + k, 'Content-Type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', method, params, id: 1 }),
        });
        for (let i = 0; i < 40; i++) {
          await Promise.all([call('add', { a: i, b: 1 }), call('multiply', { a: i, b: 2 }), call('count', {}),
            call('divide', { a: i, b: i % 5 })]);
        }
      }, key);
      await page.waitForFunction(() => {
        const tr = document.querySelector('#functions tr[data-fn="multiply"]');
        return tr && Number(tr.children[6].textContent) >= 40 && Number(tr.children[2].textContent) > 0;
      });
    }
    if (metrics) {
      await page.waitForFunction(() => {
        const tr = document.querySelector('#functions tr[data-fn="add"]');
        return tr && Number(tr.children[6].textContent) >= 1;
      });
      step('metrics');
    } else {
      step('metrics', '(skipped: the host exports no metrics)');
    }

    // 8. The picture.
    await page.mouse.move(0, 0);
    const shot = path.join(outDir, 'status-page.png');
    await page.screenshot({ path: shot, fullPage: true });
    if (process.env.SCREENSHOT) fs.copyFileSync(shot, process.env.SCREENSHOT);
    step('screenshot', shot);

    if (problems.length) fail(problems.join('\n'));
    console.log(`ok ${Date.now() - t0} ms`);
  } finally {
    await ctx.close();
    fs.rmSync(userDataDir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error('FAIL: ' + (e && e.stack ? e.stack : e));
  process.exit(1);
});
