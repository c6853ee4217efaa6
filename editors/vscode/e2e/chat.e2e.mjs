// The chat view in a real VS Code: code-server 4.96.4 (VS Code 1.96.4; e2e/install-code-server.sh
// installs it into a cache) with the packaged .vsix installed, driven by Debian's chromium through
// playwright-core, the sidecar of this checkout on scripted-model runs ($CONTEXT_SIDECAR_CHAT_SCRIPTS):
//   1. a command the model runs waits in its tool card; a click on "Allow once" runs it;
//   2. a proposed edit opens in the diff editor; its Accept button changes the file on disk;
//   3. the model keeps a todo list (`update_plan`): the chat shows it as a checklist, updated;
//   4. a long answer is cancelled mid-stream with the chat's Cancel button;
//   5. after a window reload the transcript is back, the checklist with it;
//   6. "Rewind to here" on the edit's message: the diff editor shows what would change, the quick
//      pick's "Code and conversation", a hand edit's conflict forced in the modal; the file is back
//      on disk, the diff closed, the chat in the fork with the message in the prompt box.
// Screenshots go to .artifacts/vscode-e2e/ (git-ignored); with --readme-screenshot the one with the
// tool card and its approval is also written to media/chat-screenshot.png.
import { spawn, execFileSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const ext = path.resolve(here, "..");
const repo = path.resolve(ext, "..", "..");
const python = process.env.SIDECAR_PYTHON ?? path.join(repo, ".venv", "bin", "python");
const vsix = path.join(ext, "dist", "context-sidecar.vsix");
const shots = path.join(repo, ".artifacts", "vscode-e2e");
const readmeShot = process.argv.includes("--readme-screenshot") ? path.join(ext, "media", "chat-screenshot.png") : undefined;
const started = Date.now();
const log = (m) => process.stdout.write(`# ${((Date.now() - started) / 1000).toFixed(1)}s ${m}\n`);

const codeServer = execFileSync("sh", [path.join(here, "install-code-server.sh")], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }).trim().split("\n").at(-1);
log(`code-server at ${codeServer}`);
if (!fs.existsSync(vsix)) throw new Error(`${vsix} is missing: run \`npm run test:all\` (make vscode-test) first`);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "vscode-e2e-"));
const userData = path.join(tmp, "user-data");
const extensions = path.join(tmp, "extensions");
const workspace = path.join(tmp, "workspace");
const store = path.join(tmp, "store");
fs.mkdirSync(path.join(userData, "User"), { recursive: true });
fs.mkdirSync(workspace);
fs.mkdirSync(shots, { recursive: true });
fs.writeFileSync(path.join(workspace, "notes.txt"), "alpha\nbeta\n");
fs.writeFileSync(
  path.join(userData, "User", "settings.json"),
  JSON.stringify({
    "contextSidecar.command": [python, "-m", "sidecar", "serve"],
    "contextSidecar.store": store,
    "contextSidecar.builtinTools": "ask",
    "workbench.startupEditor": "none",
    "workbench.colorTheme": "Default Dark Modern",
    "security.workspace.trust.enabled": false,
    "workbench.tips.enabled": false,
    "chat.commandCenter.enabled": false,
    "window.commandCenter": false,
  }),
);
const scripts = path.join(tmp, "scripts.json");
fs.writeFileSync(
  scripts,
  JSON.stringify({
    "run the greeting": { rounds: [{ reasoning: "A command, then an answer.", text: "I'll run it.", toolCalls: [{ id: "c1", name: "run_command", arguments: { command: "echo hello-from-the-shell" } }] }, { text: "The command printed **hello-from-the-shell**.\n\n```sh\necho hello-from-the-shell\n```" }] },
    "fix the notes": { rounds: [{ toolCalls: [{ id: "e1", name: "edit_file", arguments: { path: "notes.txt", old_text: "beta", new_text: "BETA (edited)" } }] }, { text: "Edited notes.txt." }] },
    "keep a plan": {
      rounds: [
        { toolCalls: [{ id: "p1", name: "update_plan", arguments: { entries: [{ content: "read notes.txt", status: "in_progress", priority: "high" }, { content: "summarise it", status: "pending" }] } }] },
        { toolCalls: [{ id: "p2", name: "update_plan", arguments: { entries: [{ content: "read notes.txt", status: "completed", priority: "high" }, { content: "summarise it", status: "in_progress" }] } }] },
        { text: "Planned and done." },
      ],
    },
    "a long answer": { rounds: [{ deltas: Array.from({ length: 80 }, (_, i) => `word${i} `), delayMs: 150 }] },
  }),
);

const env = { ...process.env, PYTHONPATH: [repo, process.env.PYTHONPATH].filter(Boolean).join(path.delimiter), CONTEXT_SIDECAR_CHAT_SCRIPTS: scripts };
const entry = path.join(codeServer, "out", "node", "entry.js");
execFileSync("node", [entry, "--extensions-dir", extensions, "--user-data-dir", userData, "--install-extension", vsix], { env, stdio: ["ignore", "ignore", "inherit"] });
log("extension installed");

const port = await new Promise((resolve) => {
  const srv = net.createServer().listen(0, "127.0.0.1", () => {
    const p = srv.address().port;
    srv.close(() => resolve(p));
  });
});
fs.writeFileSync(path.join(tmp, "config.yaml"), `bind-addr: 127.0.0.1:${port}\nauth: none\ncert: false\n`);
const server = spawn(
  "node",
  [entry, "--config", path.join(tmp, "config.yaml"), "--user-data-dir", userData, "--extensions-dir", extensions, "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust", workspace],
  { env, stdio: ["ignore", "pipe", "pipe"] },
);
let serverLog = "";
server.stdout.on("data", (d) => (serverLog += d));
server.stderr.on("data", (d) => (serverLog += d));
const deadline = Date.now() + 60_000;
while (!serverLog.includes("HTTP server listening")) {
  if (Date.now() > deadline || server.exitCode !== null) throw new Error(`code-server did not start:\n${serverLog}`);
  await new Promise((r) => setTimeout(r, 100));
}
log(`code-server listening on ${port}`);

const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox", "--disable-dev-shm-usage"] });
let failed = false;
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const shot = (name) => page.screenshot({ path: path.join(shots, `${name}.png`) });
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
  await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
  log("workbench loaded");

  async function openChat() {
    const item = page.locator('.activitybar [aria-label^="Context Sidecar"]').first();
    await item.waitFor({ timeout: 60_000 });
    const chat = await chatFrame(5_000).catch(() => undefined);
    if (!chat) await item.click();
    return chatFrame(60_000);
  }
  async function chatFrame(timeout) {
    const end = Date.now() + timeout;
    for (;;) {
      for (const frame of page.frames()) {
        if (await frame.locator('[data-testid="prompt"]').count().catch(() => 0)) return frame;
      }
      if (Date.now() > end) throw new Error("the chat webview did not appear");
      await page.waitForTimeout(200);
    }
  }
  async function send(chat, text) {
    const box = chat.locator('[data-testid="prompt"] textarea');
    await box.fill(text);
    await box.press("Enter");
  }

  let chat = await openChat();
  log("chat view open");

  // 1. a tool call approved by a click in its card
  await send(chat, "run the greeting");
  const card = chat.locator('[data-testid="tool-card"][data-call="c1"]');
  await card.locator('[data-testid="approval"]').waitFor({ timeout: 60_000 });
  await chat.locator('[data-testid="item-assistant"]').first().waitFor();
  await shot("1-tool-card-approval");
  if (readmeShot) await page.screenshot({ path: readmeShot, clip: { x: 0, y: 0, width: 760, height: 800 } });
  await card.locator('[data-testid="approve-once"]').click();
  await chat.locator('[data-testid="tool-card"][data-call="c1"][data-status="done"]').waitFor({ timeout: 60_000 });
  await chat.locator('[data-testid="usage"]').first().waitFor({ timeout: 60_000 });
  const output = await card.locator('[data-testid="tool-output"] pre').textContent();
  if (!output.includes("hello-from-the-shell")) throw new Error(`the command's output is not in its card: ${output}`);
  await shot("2-tool-card-done");
  log("1. tool call approved in the chat");

  // 2. an edit accepted in the diff editor
  await send(chat, "fix the notes");
  const accept = page.locator('.editor-actions [aria-label^="Accept Edit"]').first();
  await accept.waitFor({ timeout: 60_000 });
  await page.locator(".monaco-diff-editor").first().waitFor();
  await page.waitForTimeout(500);
  await shot("3-diff-editor");
  await accept.click();
  const file = path.join(workspace, "notes.txt");
  const until = Date.now() + 30_000;
  while (!fs.readFileSync(file, "utf8").includes("BETA (edited)")) {
    if (Date.now() > until) throw new Error(`notes.txt was not changed: ${fs.readFileSync(file, "utf8")}`);
    await page.waitForTimeout(100);
  }
  await chat.locator('[data-testid="tool-card"][data-call="e1"][data-status="done"]').waitFor({ timeout: 30_000 });
  await shot("4-edit-accepted");
  log("2. edit accepted in the diff editor, file changed on disk");

  // 3. the todo list: one checklist, replaced by the second update; no tool card for it
  await send(chat, "keep a plan");
  const plan = chat.locator('[data-testid="plan"]');
  await plan.locator('[data-testid="plan-step"][data-status="in_progress"]', { hasText: "summarise it" }).waitFor({ timeout: 60_000 });
  await chat.locator('[data-testid="usage"]').nth(2).waitFor({ timeout: 60_000 });
  const steps = await plan.locator('[data-testid="plan-step"]').evaluateAll((els) => els.map((e) => `${e.getAttribute("data-status")}:${e.textContent}`));
  const want = ["completed:☑read notes.txt", "in_progress:◐summarise it"];
  if (JSON.stringify(steps) !== JSON.stringify(want)) throw new Error(`the plan shows ${JSON.stringify(steps)}, not ${JSON.stringify(want)}`);
  if ((await plan.count()) !== 1) throw new Error(`${await plan.count()} plans shown, not one`);
  if (await chat.locator('[data-testid="tool-card"][data-call="p1"]').count()) throw new Error("update_plan got a tool card");
  await shot("5-plan");
  log("3. the todo list shown as a checklist, updated");

  // 4. cancel mid-stream
  await send(chat, "a long answer");
  await chat.locator('[data-testid="item-assistant"]', { hasText: "word3" }).waitFor({ timeout: 60_000 });
  await chat.locator('[data-testid="cancel"]').click();
  await chat.locator('[data-testid="usage"]', { hasText: "cancelled" }).waitFor({ timeout: 30_000 });
  const streamed = await chat.locator('[data-testid="item-assistant"]', { hasText: "word3" }).textContent();
  if (streamed.includes("word79")) throw new Error("the answer was not cut by the cancel");
  await shot("6-cancelled");
  log("4. cancelled mid-stream");

  // 5. the transcript after a window reload
  await page.reload();
  await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
  chat = await openChat();
  await chat.locator('[data-testid="tool-card"][data-call="c1"][data-status="done"]').waitFor({ timeout: 60_000 });
  await chat.locator('[data-testid="tool-card"][data-call="e1"][data-status="done"]').waitFor({ timeout: 60_000 });
  const users = await chat.locator('[data-testid="item-user"] .bubble').allTextContents();
  await chat.locator('[data-testid="plan"] [data-testid="plan-step"][data-status="completed"]', { hasText: "read notes.txt" }).waitFor({ timeout: 60_000 });
  for (const prompt of ["run the greeting", "fix the notes", "keep a plan", "a long answer"]) {
    if (!users.includes(prompt)) throw new Error(`"${prompt}" is not in the transcript after the reload: ${JSON.stringify(users)}`);
  }
  await shot("7-after-reload");
  log("5. transcript back after a window reload, the plan with it");

  // 6. rewind to before the edit: the diff, the choice, the conflict forced in the modal
  fs.writeFileSync(file, "alpha\nBETA (edited) and by hand\n");
  const message = chat.locator('[data-testid="item-user"]', { hasText: "fix the notes" });
  await message.hover();
  await message.locator('[data-testid="rewind"]').click();
  const tab = page.locator('.tab', { hasText: "now ↔ rewound" }).first();
  await tab.waitFor({ timeout: 60_000 });
  await page.locator(".monaco-diff-editor").first().waitFor();
  const pick = page.locator(".quick-input-widget .monaco-list-row", { hasText: "Code and conversation" });
  await pick.waitFor({ timeout: 30_000 });
  await page.waitForTimeout(300);
  await shot("8-rewind-diff-and-choice");
  await pick.click();
  const force = page.locator(".monaco-dialog-box .monaco-button", { hasText: "Overwrite them (force)" });
  await force.waitFor({ timeout: 30_000 });
  const dialog = await page.locator(".monaco-dialog-box").textContent();
  if (!dialog.includes("notes.txt")) throw new Error(`the conflict modal does not name notes.txt: ${dialog}`);
  await shot("9-rewind-conflict");
  await force.click();
  const back = Date.now() + 30_000;
  while (fs.readFileSync(file, "utf8") !== "alpha\nbeta\n") {
    if (Date.now() > back) throw new Error(`notes.txt was not rewound: ${JSON.stringify(fs.readFileSync(file, "utf8"))}`);
    await page.waitForTimeout(100);
  }
  await chat.locator('[data-testid="notice"]', { hasText: "Rewound" }).waitFor({ timeout: 30_000 });
  const forkUsers = await chat.locator('[data-testid="item-user"] .bubble').allTextContents();
  if (JSON.stringify(forkUsers) !== JSON.stringify(["run the greeting"])) throw new Error(`the fork shows ${JSON.stringify(forkUsers)}`);
  const boxText = await chat.locator('[data-testid="prompt"] textarea').inputValue();
  if (boxText !== "fix the notes") throw new Error(`the prompt box holds ${JSON.stringify(boxText)}`);
  await page.locator('.tab', { hasText: "now ↔ rewound" }).waitFor({ state: "detached", timeout: 10_000 });
  await shot("10-rewound");
  log("6. rewound: the diff, the choice, the conflict forced; the file back, the chat in the fork");
} catch (err) {
  failed = true;
  const pages = browser.contexts().flatMap((c) => c.pages());
  if (pages[0]) await pages[0].screenshot({ path: path.join(shots, "failure.png") }).catch(() => undefined);
  process.stderr.write(`${err.stack ?? err}\n--- code-server log ---\n${serverLog.slice(-4000)}\n`);
} finally {
  await browser.close();
  server.kill();
  await new Promise((r) => server.once("exit", r));
  fs.rmSync(tmp, { recursive: true, force: true });
}
process.stdout.write(failed ? "0 passed, 1 failed\n" : `1 passed, 0 failed (real VS Code, ${((Date.now() - started) / 1000).toFixed(0)} s)\n`);
process.exit(failed ? 1 : 0);
