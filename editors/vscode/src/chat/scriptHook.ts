// Scripted-model runs for tests and demos, as `context-sidecar acp --script` has them: when
// $CONTEXT_SIDECAR_CHAT_SCRIPTS names a JSON file `{"<prompt>": {"rounds": [...]}, ...}`, a
// chat prompt found in it runs with that script (see docs/protocol/index.md, *Scripted runs*).
// Read at each prompt, so a test can change it between prompts.
import * as fs from "node:fs";

export const SCRIPTS_ENV = "CONTEXT_SIDECAR_CHAT_SCRIPTS";

export function scriptFor(prompt: string, file = process.env[SCRIPTS_ENV]): Record<string, unknown> | undefined {
  if (!file) return undefined;
  try {
    const scripts = JSON.parse(fs.readFileSync(file, "utf8")) as Record<string, unknown>;
    const script = scripts[prompt.trim()];
    return script !== null && typeof script === "object" ? (script as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
