// Drives eywa's web view in a real Chromium, as a person would, against a running
// `eywa serve` (tests/browser.rs starts it). Fails on any console error, page error,
// failed request or answer of 400 and above, and saves screenshots for review.
//
// Environment: EYWA_URL (the web view), CHROMIUM (the browser), PLAYWRIGHT (the
// playwright-core folder), SHOTS (where screenshots go), STAGED and TARGET (a new
// transcript to move into the Claude dir, for the live check), PARENT and NEW (session
// ids), PROJECT (the project name).
import { createRequire } from "node:module";
import { appendFileSync, mkdirSync, readFileSync, renameSync } from "node:fs";

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const url = env("EYWA_URL").replace(/\/$/, "");
const { chromium } = createRequire(import.meta.url)(env("PLAYWRIGHT"));
const shots = env("SHOTS");
const project = env("PROJECT");
const parent = env("PARENT");
mkdirSync(shots, { recursive: true });

const problems = [];
const watch = (page) => {
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console error on ${page.url()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`page error on ${page.url()}: ${e.message}`));
  page.on("requestfailed", (r) => {
    // A load the browser cancels because the page was left (its event stream, an icon
    // still coming on a busy machine) is not a failure of the server.
    const left = r.failure()?.errorText === "net::ERR_ABORTED";
    if (!left) problems.push(`request failed: ${r.url()} (${r.failure()?.errorText})`);
  });
  page.on("response", (r) => {
    if (r.status() >= 400) problems.push(`${r.status()} for ${r.url()}`);
  });
  return page;
};
const check = (ok, what) => {
  if (!ok) throw new Error(`not so: ${what}`);
  console.log(`ok: ${what}`);
};

const browser = await chromium.launch({
  executablePath: env("CHROMIUM"),
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: url });
  const page = watch(await context.newPage());

  // Home → project → session.
  await page.goto(`${url}/`);
  check((await page.title()).startsWith("Projects"), "the home page lists projects");
  await page.click(`a[href="/projects/${project}"]`);
  await page.waitForURL(`**/projects/${project}`);
  // j and k move through the sessions, each row's headline taking the focus.
  const focused = () => page.evaluate(() => {
    const rows = [...document.querySelectorAll("ol.sessions > li")];
    const at = rows.findIndex((row) => row.contains(document.activeElement));
    return [at, document.activeElement?.matches("a.headline") ?? false];
  });
  await page.keyboard.press("j");
  check(JSON.stringify(await focused()) === "[0,true]", "j moves to the first session's link");
  await page.keyboard.press("j");
  await page.keyboard.press("k");
  check(JSON.stringify(await focused()) === "[0,true]", "j then k comes back to it");
  await page.click(`a.headline[href="/sessions/${parent}"]`);
  await page.waitForURL(`**/sessions/${parent}`);
  check(await page.locator("section.handoff").isVisible(), "the session opens on its handoff");

  // The resume command, copied.
  await page.click("div.resume button.copy");
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  check(copied === `cd /w/app && claude --resume ${parent}`, "Copy puts the resume command on the clipboard");

  // A tool call, folded until clicked.
  const tool = page.locator("details.tool").first();
  check(!(await tool.evaluate((d) => d.open)), "a tool call starts folded");
  await tool.locator("summary").click();
  check(await tool.evaluate((d) => d.open), "clicking a tool call unfolds it");
  check(await tool.locator("pre").first().isVisible(), "its input shows");

  // Its subagent, on a page of its own.
  await page.click("section.agents a");
  await page.waitForURL("**/sessions/agent-*");
  check(
    (await page.locator("section.transcript").innerText()).includes("flaky test"),
    "the subagent's page shows its transcript",
  );

  // ⌘K (Ctrl+K here) from any page, then a hit.
  await page.keyboard.press("Control+K");
  check(
    await page.evaluate(() => document.activeElement?.id === "quick"),
    "Ctrl+K focuses the quick search",
  );
  await page.keyboard.type("flaky test");
  await page.keyboard.press("Enter");
  await page.waitForURL("**/search?q=flaky+test");
  const hits = page.locator("li.hit a.headline");
  check((await hits.count()) > 0, "the search finds sessions");
  const why = page.locator("details.why").first();
  await why.locator("summary").click();
  check(await why.locator("table").isVisible(), "a hit's signals unfold");
  await hits.first().click();
  await page.waitForURL("**/sessions/**");
  check((await page.locator("h1").count()) === 1, "a hit opens its session");

  // A node, and through its drawing to a neighbour.
  await page.goto(`${url}/nodes/project:${project}`);
  const drawn = page.locator("svg.graph a");
  check((await drawn.count()) >= 2, "the project's neighbourhood is drawn");
  const first = await page.locator("h1").innerText();
  await drawn.nth(1).click();
  await page.waitForURL("**/nodes/**");
  check((await page.locator("h1").innerText()) !== first, "a drawn node opens its page");
  await page.selectOption("form.asof select[name=depth]", "2");
  await page.click("form.asof button");
  await page.waitForURL("**depth=2**");
  check((await page.locator("svg.graph circle").count()) >= 2, "two hops are drawn");

  // A memory remembered from its form, then forgotten.
  await page.goto(`${url}/memories`);
  await page.fill("form.write textarea[name=content]", "Start the server before the net tests");
  await page.fill("form.write input[name=project]", project);
  await page.click("form.write button[type=submit]");
  await page.waitForURL(/\/memories\/[0-9a-f]+$/);
  check(
    (await page.locator("div.memory").innerText()).includes("Start the server"),
    "a memory is remembered from its form",
  );
  await page.fill('form[action$="/forget"] input[name=reason]', "done with it");
  await page.click('form[action$="/forget"] button');
  await page.waitForURL(/\/memories\/[0-9a-f]+$/);
  check(
    (await page.locator("ol.versions").innerText()).includes("forgotten"),
    "and forgotten from its page",
  );

  // A new session, written while the project's page is open, appears on it by itself.
  await page.goto(`${url}/projects/${project}`);
  await page.waitForFunction(() => document.querySelector("[data-live]") !== null);
  let started = Date.now();
  renameSync(env("STAGED"), env("TARGET"));
  await page.waitForSelector(`#s-${env("NEW")}`, { timeout: 15000 });
  console.log(`a new session showed ${Date.now() - started} ms after it was written`);
  check(
    (await page.locator("#session-count").innerText()).startsWith("2 sessions"),
    "a session written while serving appears on the open page, and is counted",
  );

  // A turn appended to an open session's transcript appears at its end.
  await page.goto(`${url}/sessions/${parent}`);
  const turns = await page.locator("#messages > article").count();
  started = Date.now();
  appendFileSync(env("PARENT_PATH"), readFileSync(env("APPENDED")));
  await page.waitForSelector(`#m-${env("APPENDED_UUID")}`, { timeout: 15000 });
  console.log(`a new turn showed ${Date.now() - started} ms after it was written`);
  check(
    (await page.locator("#messages > article").count()) > turns,
    "a turn appended while the session is open appears at its end",
  );

  // Screenshots: desktop and phone, light and dark.
  const devices = {
    desktop: { viewport: { width: 1280, height: 900 } },
    phone: { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true },
  };
  for (const scheme of ["light", "dark"]) {
    for (const [name, device] of Object.entries(devices)) {
      const shot = await browser.newContext({ ...device, colorScheme: scheme });
      const p = watch(await shot.newPage());
      for (const [page, path] of [
        ["home", "/"],
        ["session", `/sessions/${parent}`],
        ["search", "/search?q=flaky+test"],
        ["node", `/nodes/project:${project}`],
        ["context", `/context?project=${project}`],
        ["stats", "/stats"],
        ["memories", "/memories"],
      ]) {
        await p.goto(`${url}${path}`);
        await p.screenshot({ path: `${shots}/${page}-${name}-${scheme}.png` });
      }
      await shot.close();
    }
  }
  console.log(`screenshots in ${shots}`);
} finally {
  await browser.close();
}
if (problems.length > 0) {
  console.error(problems.join("\n"));
  process.exit(1);
}
