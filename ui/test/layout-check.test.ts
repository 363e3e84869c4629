import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkLayout, hasChromium, launchChromium } from './support.ts';

/**
 * The layout check used by the e2e suite must be able to fail: each page below breaks one rule
 * (overflow, overlap, a squeezed button, an unlabelled field, low contrast) and must be reported.
 */
let browser: Browser;
let page: Page;
beforeAll(async () => {
  if (!hasChromium) return;
  browser = await launchChromium();
  page = await browser.newPage();
});
afterAll(async () => {
  await browser?.close();
});

const base = '<style>body{margin:0;font:16px sans-serif;background:#fff;color:#111} .card{padding:8px;border:1px solid #ccc}</style><main id="main">';

async function problemsOf(html: string): Promise<string> {
  await page.setContent(base + html + '</main>');
  try {
    await checkLayout(page, 'layout-check-fixture');
    return '';
  } catch (err) {
    return (err as Error).message;
  }
}

describe.skipIf(!hasChromium)('the layout check', () => {
  it('passes a page that breaks no rule', async () => {
    expect(await problemsOf('<div class="card">One</div><div class="card">Two</div><label for="x">Name</label><input id="x">')).toBe('');
  });

  it('reports horizontal overflow and names the culprit', async () => {
    expect(await problemsOf('<div class="card wide" style="width:900px">too wide</div>')).toMatch(/horizontal overflow.*div\.card\.wide/);
  });

  it('reports overlapping cards', async () => {
    expect(await problemsOf('<div class="card">A</div><div class="card" style="margin-top:-20px">B</div>')).toMatch(/overlaps/);
  });

  it('reports a squeezed button', async () => {
    expect(await problemsOf('<div style="width:30px"><button>Sign out of every device right now please</button></div>')).toMatch(/button squeezed/);
  });

  it('reports a one-word button label broken over two lines', async () => {
    expect(await problemsOf('<div style="width:40px;overflow-wrap:anywhere"><button style="padding:8px">Undo</button></div>')).toMatch(/button squeezed/);
  });

  it('reports an unlabelled field and low-contrast text', async () => {
    const report = await problemsOf('<input id="nolabel"><p style="color:#bbb">faint text</p>');
    expect(report).toMatch(/unlabelled control: input#nolabel/);
    expect(report).toMatch(/low contrast 1\.\d+: p/);
  });
});
