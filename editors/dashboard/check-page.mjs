// Render dashboard.html in headless Chromium with real data and report what it shows.
// usage: node check-page.mjs PAGE.html DATA.json SCREENSHOT.png
//   DATA.json: {"snapshot": <PromptSnapshot>, "events": [<RunEvent>, ...],
//               "diff": <SnapshotDiff>?, "cache": <CacheAccounting>?}
// Prints {"categories": {...}, "totalUsed": n, "totalFree": n, "totalAvailable": n,
//         "ledgerRows": n, "breakpointRows": n, "eventRows": n, "diffPrefixTokens": n,
//         "cache": {...}, "masking": {...}, "maskedRows": [...], "historyWindow": {...},
//         "recoverButtons": n, "consoleErrors": [...]} on stdout.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium } from "playwright-core";

const [pagePath, dataPath, shotPath] = process.argv.slice(2);
if (!pagePath || !dataPath || !shotPath) {
  console.error("usage: node check-page.mjs PAGE.html DATA.json SCREENSHOT.png");
  process.exit(2);
}
const data = JSON.parse(readFileSync(dataPath, "utf8"));

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH || "/usr/bin/chromium",
  args: [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
});
try {
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  const consoleErrors = [];
  page.on("console", (m) => { if (m.type() === "error") consoleErrors.push(m.text()); });
  page.on("pageerror", (e) => consoleErrors.push(String(e)));
  await page.goto(pathToFileURL(resolve(pagePath)).href);
  await page.evaluate(({ snapshot, events, diff, cache }) => {
    window.renderSnapshot(snapshot);
    window.renderEvents(events);
    if (diff) window.renderDiff(diff);
    if (cache) window.renderCache(cache);
  }, { snapshot: data.snapshot, events: data.events ?? [], diff: data.diff ?? null, cache: data.cache ?? null });
  const result = await page.evaluate(() => {
    const categories = {};
    for (const node of document.querySelectorAll('[data-testid^="category-"]')) {
      categories[node.dataset.testid.slice("category-".length)] = Number(node.dataset.tokens);
    }
    const tokens = (id) => Number(document.querySelector(`[data-testid="${id}"]`).dataset.tokens);
    const count = (id) => document.querySelectorAll(`[data-testid="${id}"]`).length;
    return {
      categories,
      totalUsed: tokens("total-used"),
      totalFree: tokens("total-free"),
      totalAvailable: tokens("total-available"),
      ledgerRows: count("ledger-row"),
      breakpointRows: count("breakpoint-row"),
      eventRows: count("event-row"),
      diffPrefixTokens: Number(document.querySelector('[data-testid="diff"]').dataset.prefixTokens ?? -1),
      cache: {
        state: document.querySelector('[data-testid="cache"]').dataset.state,
        againstPrevious: document.querySelector('[data-testid="cache"]').dataset.againstPrevious === "true",
        readTokens: tokens("cache-read"),
        writeTokens: tokens("cache-write"),
        uncachedTokens: tokens("cache-uncached"),
        inputTokens: tokens("cache-input"),
        costTotal: Number(document.querySelector('[data-testid="cache-cost"]').dataset.cost),
        costText: document.querySelector('[data-testid="cache-cost"]').textContent,
        firstChange: document.querySelector('[data-testid="cache-first-change"]').dataset.value || null,
      },
      masking: { ...document.querySelector('[data-testid="masking"]').dataset },
      maskedRows: [...document.querySelectorAll('[data-testid="masked-row"]')].map((row) => ({
        itemId: row.dataset.itemId, seq: Number(row.dataset.seq), tokens: Number(row.dataset.tokens),
      })),
      historyWindow: { ...document.querySelector('[data-testid="history-window"]').dataset },
      historyWindowText: document.querySelector('[data-testid="history-window"]').textContent,
      recoverButtons: count("recover"),
    };
  });
  await page.screenshot({ path: shotPath, fullPage: true });
  process.stdout.write(JSON.stringify({ ...result, consoleErrors }) + "\n");
} finally {
  await browser.close();
}
