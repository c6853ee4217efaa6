// Copy the shared dashboard page into media/ so the .vsix is self-contained.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const source = path.resolve(here, "..", "..", "dashboard", "dashboard.html");
const target = path.resolve(here, "..", "media", "dashboard.html");
fs.mkdirSync(path.dirname(target), { recursive: true });
fs.copyFileSync(source, target);
process.stdout.write(`copied ${path.relative(process.cwd(), source)} -> ${path.relative(process.cwd(), target)}\n`);
