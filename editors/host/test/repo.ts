// Where the node tests find the repository and the sidecar's interpreter (shared by every test
// file; it defines no tests of its own).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root: the nearest ancestor of this (compiled) file holding `sidecar/` and `pyproject.toml`. */
function findRepoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (fs.existsSync(path.join(dir, "pyproject.toml")) && fs.existsSync(path.join(dir, "sidecar"))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error("repository root not found above " + fileURLToPath(import.meta.url));
    dir = parent;
  }
}

export const REPO = findRepoRoot();
/** `$SIDECAR_PYTHON`, else `<repo>/.venv/bin/python`. */
export const PYTHON = process.env["SIDECAR_PYTHON"] ?? path.join(REPO, ".venv", "bin", "python");
