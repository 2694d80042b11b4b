// vit serve's page in a real browser: Debian's chromium driven by playwright-core. Starts
// `vit serve` on the default model with an API key, opens the page, checks that it shows the
// API's 401 until the key is typed, that the cat photo reads "Egyptian cat" first with the
// attention map drawn over it, and that a file that is no image shows the server's error; then on a CLIP micro model, that the class names
// typed are the bars' labels, and on an image-to-text micro model, that the page shows the text
// /v1/generate gives. Run by tests/browser.sh (make test), which checks that chromium and
// node_modules are there; VIT_SCREENSHOT=docs/serve-page.png writes the screenshot README shows.
"use strict";
const { spawn } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { chromium } = require("playwright-core");

const root = path.resolve(__dirname, "..", "..");
const vit = process.env.VIT_BIN || path.join(root, "bin", "vit");
const browserPath = process.env.VIT_CHROMIUM || "/usr/bin/chromium";
const key = "page-test-key-" + process.pid;

function fail(message) {
  throw new Error(message);
}

// `vit serve [-m MODEL] --port 0 ARGS`: resolves with the server and its port once it says it is
// listening.
function startServer(model, args = []) {
  const server = spawn(vit, ["serve", ...(model ? ["-m", path.join(root, model)] : []),
    "--port", "0", "-t", "1", ...args], { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("vit serve did not listen in 60 s: " + log)),
      60000);
    server.stderr.on("data", (chunk) => {
      log += chunk;
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(log);
      if (m) { clearTimeout(timer); resolve({ server, port: Number(m[1]), log: () => log }); }
    });
    server.on("exit", (code) => reject(new Error("vit serve exited with " + code + ": " + log)));
  });
}

async function waitHealthy(port) {
  for (const until = Date.now() + 120000; Date.now() < until;) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health`)).status === 200) return;
    } catch (e) { /* not answering yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  fail("/health did not answer 200 within 120 s");
}

// Runs check(page, port) on a fresh tab of the page served with MODEL; the page may fetch nothing
// but its server, and its script must not fail.
async function withPage(context, model, args, check) {
  const { server, port } = await startServer(model, args);
  const page = await context.newPage();
  try {
    await waitHealthy(port);
    const elsewhere = [];
    page.on("request", (r) => {
      if (!r.url().startsWith(`http://127.0.0.1:${port}/`) && !r.url().startsWith("blob:"))
        elsewhere.push(r.url());
    });
    const pageErrors = [];
    page.on("pageerror", (e) => pageErrors.push(e.message));
    await page.goto(`http://127.0.0.1:${port}/`);
    await check(page, port);
    if (pageErrors.length) fail("the page's script failed: " + pageErrors.join("; "));
    if (elsewhere.length) fail("the page fetched from elsewhere: " + elsewhere.join(", "));
  } finally {
    await page.close();
    server.kill("SIGTERM");
  }
}

// The map /v1/explain gives is drawn over the photo: the pixel at the hottest patch's centre is
// bright (inferno's top, blended 0.6 over the photo), the coldest patch's dark.
async function heatMap(page, port, file, label) {
  const canvas = page.locator('.result canvas.heat[data-drawn="1"]');
  await canvas.waitFor({ timeout: 60000 });
  const shown = await canvas.getAttribute("data-label");
  if (label !== null && shown !== label) fail(`the heat map explains "${shown}", not ${label}`);
  const photo = fs.readFileSync(path.join(root, "examples", "photos", file));
  const x = (await (await fetch(`http://127.0.0.1:${port}/v1/explain`,
    { method: "POST", body: photo, headers: { Authorization: "Bearer " + key } })).json())
    .results[0];
  const [gh, gw] = x.grid;
  const at = (i) => canvas.evaluate((c, [i, gh, gw, x]) => {
    const w = c.width / x.image.width, h = c.height / x.image.height;
    const px = (x.region.x + ((i % gw) + 0.5) / gw * x.region.width) * w;
    const py = (x.region.y + (Math.floor(i / gw) + 0.5) / gh * x.region.height) * h;
    return [...c.getContext("2d").getImageData(Math.floor(px), Math.floor(py), 1, 1).data];
  }, [i, gh, gw, x]);
  const hottest = x.map.indexOf(Math.max(...x.map)), coldest = x.map.indexOf(Math.min(...x.map));
  const hot = await at(hottest), cold = await at(coldest);
  console.log(`page: ${file}: heat map of ${gw}x${gh} patches drawn; hottest patch ${hottest} ` +
    `rgb(${hot.slice(0, 3)}), coldest ${coldest} rgb(${cold.slice(0, 3)})`);
  if (!(hot[0] > 140 && hot[1] > 140)) fail(`the hottest patch is not bright: ${hot}`);
  if (!(Math.max(...cold.slice(0, 3)) < 115)) fail(`the coldest patch is not dark: ${cold}`);
}

// At a phone's width (400 px) the answer stays readable: each label at least 120 px wide and the
// first ("Egyptian cat") whole, no bar, photo or map past the results' right edge, nothing to
// scroll sideways. VIT_SCREENSHOT_PHONE=FILE writes its screenshot.
async function phoneWidth(page) {
  await page.setViewportSize({ width: 400, height: 900 });
  const layout = await page.evaluate(() => {
    const box = (e) => e.getBoundingClientRect();
    const edge = box(document.querySelector("#results")).right;
    const parts = ".result .bar, .result .track, .result img, .result canvas, .result .answer";
    return {
      scroll: document.documentElement.scrollWidth,
      names: [...document.querySelectorAll(".result .bar .name")].map((e) => ({
        text: e.textContent, width: Math.round(box(e).width), whole: e.scrollWidth <= e.clientWidth,
      })),
      past: [...document.querySelectorAll(parts)].filter((e) => box(e).right > edge + 0.5)
        .map((e) => `${e.tagName.toLowerCase()}.${e.className} (right ${box(e).right} > ${edge})`),
    };
  });
  if (process.env.VIT_SCREENSHOT_PHONE)
    await page.screenshot({ path: process.env.VIT_SCREENSHOT_PHONE, fullPage: true });
  console.log("page: at 400 px: labels " +
    layout.names.map((n) => `${n.text} ${n.width} px${n.whole ? "" : " (cut)"}`).join("; ") +
    `; page ${layout.scroll} px wide`);
  await page.setViewportSize({ width: 1000, height: 640 });
  if (layout.scroll > 400) fail(`at 400 px the page is ${layout.scroll} px wide (scrolls sideways)`);
  if (layout.past.length) fail("at 400 px past the results' edge: " + layout.past.join(", "));
  const narrow = layout.names.filter((n) => n.width < 120);
  if (narrow.length) fail("at 400 px labels under 120 px: " + narrow.map((n) => n.text).join(", "));
  if (!layout.names[0].whole) fail(`at 400 px "${layout.names[0].text}" is cut`);
}

async function classifier(page, port) {
  // Without the key: the API's 401 on the page.
  await page.locator("#error").filter({ hasText: "an API key is needed" })
    .waitFor({ timeout: 30000 });
  console.log("page: without the key it shows: " + (await page.locator("#error").innerText()));
  await page.fill("#key", key);
  await page.locator("#key").dispatchEvent("change");
  await page.locator("#model").filter({ hasText: "vit-tiny-in1k" }).waitFor({ timeout: 30000 });
  if (await page.locator("#error").isVisible()) fail("the error stayed after the key was given");

  // A file that is no image: the server's 400 on the page.
  await page.setInputFiles("#files", path.join(root, "README.md"));
  await page.locator("#error").filter({ hasText: "not a PNG, JPEG" }).waitFor({ timeout: 30000 });
  console.log("page: README.md gives: " + (await page.locator("#error").innerText()));

  // The cat: Egyptian cat first, the bars in falling order, the photo beside them.
  await page.setInputFiles("#files", path.join(root, "examples", "photos", "cat.jpg"));
  await page.locator(".result .bar").first().waitFor({ timeout: 60000 });
  const names = await page.locator(".result .bar .name").allInnerTexts();
  const pcts = await page.locator(".result .bar .pct").allInnerTexts();
  console.log("page: cat.jpg: " + names.map((n, i) => `${n} ${pcts[i]}`).join("; "));
  if (names[0] !== "Egyptian cat") fail(`the first class is "${names[0]}", not Egyptian cat`);
  if (names.length !== 5) fail(`${names.length} bars, not 5 (k=5)`);
  const probs = pcts.map((p) => parseFloat(p));
  if (probs.some((p, i) => i > 0 && p > probs[i - 1])) fail("bars not in falling order");
  if (await page.locator("#error").isVisible()) fail("an error is still shown after the answer");
  const img = page.locator(".result img");
  const natural = await img.evaluate((e) => e.decode().then(() => e.naturalWidth));
  if (!(natural > 0)) fail("the photo is not shown beside its bars");

  await heatMap(page, port, "cat.jpg", "Egyptian cat");
  await phoneWidth(page);

  if (process.env.VIT_SCREENSHOT) {
    await page.screenshot({ path: process.env.VIT_SCREENSHOT, fullPage: true });
    console.log("page: screenshot in " + process.env.VIT_SCREENSHOT);
  }
}

// CLIP: the class names box, whose names are the bars' labels (3 names: 3 bars).
async function zeroShot(page, port) {
  await page.locator("#classes").waitFor({ state: "visible", timeout: 30000 });
  await page.fill("#classes", "cat, dog, a red car");
  await page.setInputFiles("#files", path.join(root, "examples", "photos", "cat.jpg"));
  await page.locator(".result .bar").first().waitFor({ timeout: 60000 });
  const names = await page.locator(".result .bar .name").allInnerTexts();
  console.log("page: clip-micro, cat.jpg against cat, dog, a red car: " + names.join("; "));
  if (names.slice().sort().join("|") !== "a red car|cat|dog")
    fail("the bars are not the names typed: " + names.join("; "));
  // CLIP's tower is not explained yet: /v1/model says so, and the page draws no map, shows no error
  const model = await (await fetch(`http://127.0.0.1:${port}/v1/model`)).json();
  if (model.image.explain !== false) fail("/v1/model says CLIP's tower is explained");
  if (await page.locator(".result canvas.heat").count()) fail("a heat map for CLIP");
  if (await page.locator("#error").isVisible()) fail("an error shown for CLIP's answer");
}

// Image to text: the page shows the text /v1/generate gives for the image.
async function generate(page, port) {
  const photo = path.join(root, "examples", "photos", "coffee.jpg");
  const answer = await fetch(`http://127.0.0.1:${port}/v1/generate`,
    { method: "POST", body: fs.readFileSync(photo) });
  const want = (await answer.json()).results[0].text;
  await page.locator("#model").filter({ hasText: "image-to-text" }).waitFor({ timeout: 30000 });
  await page.setInputFiles("#files", photo);
  await page.locator(".result .text").waitFor({ timeout: 60000 });
  const got = await page.locator(".result .text").textContent();
  console.log("page: ved-trocr-vit, coffee.jpg: " + JSON.stringify(got));
  if (got !== want)
    fail(`the page shows ${JSON.stringify(got)}, /v1/generate ${JSON.stringify(want)}`);
  if (await page.locator(".result .bar").count()) fail("bars shown for an image-to-text model");
}

// A text model: the texts typed, one a line, each with the labels /v1/text gives it, in its order.
async function textModel(page, port) {
  const texts = ["a wonderful, moving film", "dull and far too long"];
  const answer = await fetch(`http://127.0.0.1:${port}/v1/text?k=5`,
    { method: "POST", body: JSON.stringify({ texts }) });
  const want = (await answer.json()).results.map((r) => r.top.map((p) => p.label).join("; "));
  await page.locator("#texts").waitFor({ state: "visible", timeout: 30000 });
  if (await page.locator("#drop").isVisible()) fail("an image box for a text model");
  await page.fill("#texts", texts.join("\n"));
  await page.click("#send-texts");
  await page.locator(".result").nth(1).waitFor({ timeout: 60000 });
  const rows = page.locator(".result");
  for (let i = 0; i < texts.length; i++) {
    const title = await rows.nth(i).locator("h3").textContent();
    const got = (await rows.nth(i).locator(".bar .name").allInnerTexts()).join("; ");
    console.log(`page: bert-sst2-tiny, "${title}": ${got}`);
    if (title !== texts[i]) fail(`result ${i} is titled "${title}", not "${texts[i]}"`);
    if (got !== want[i]) fail(`"${texts[i]}": the page shows ${got}, /v1/text ${want[i]}`);
  }
}

async function main() {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "vit-page-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: browserPath,
    headless: true,
    viewport: { width: 1000, height: 640 },
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  try {
    await withPage(context, "models/vit-tiny-in1k", ["--api-key", key], classifier);
    await withPage(context, "tests/data/clip-micro", [], zeroShot);
    await withPage(context, "tests/data/ved-trocr-vit", [], generate);
    // ../shared's BERT (VIT_SHARED: its path), when it is there
    const shared = process.env.VIT_SHARED || path.join(root, "..", "shared");
    const bert = path.join(shared, "models", "bert-sst2-tiny");
    if (fs.existsSync(path.join(bert, "config.json")))
      await withPage(context, null, ["--text-model", bert], textModel);
    else
      console.log(`SKIP page: no ${bert}: the text box is not checked (set VIT_SHARED)`);
  } finally {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

main().then(
  () => { console.log("page: passed"); process.exit(0); },
  (e) => { console.error("page: FAILED: " + e.message); process.exit(1); },
);
