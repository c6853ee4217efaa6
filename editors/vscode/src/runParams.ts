// The run/start params of a prompt, from the settings: the sidecar's built-in workspace tools
// in the approval mode of `contextSidecar.builtinTools` when a folder is open (else the
// extension's own read_file), the stored profile of `contextSidecar.profile`, the assembly
// profile of `contextSidecar.assembly`. Shared by *Run Prompt* and the chat.
import type { RunStartParams } from "./host";
import type { Settings } from "./settings";
import { TOOLS } from "./tools";

/** The built-in tools a run gets besides the extension's read_file. */
export const SIDECAR_TOOLS = ["list_dir", "glob", "grep", "write_file", "edit_file", "run_command", "recall", "update_plan"] as const;

export function runStartParams(settings: Settings, sessionId: string, prompt: string, roots: readonly string[]): RunStartParams {
  const mode = settings.builtinTools;
  const builtin = mode !== "off" && roots.length > 0;
  return {
    sessionId,
    userTurn: [{ type: "text", text: prompt }],
    // The sidecar's own tools, but read_file is the extension's: it reads the editor's buffer,
    // unsaved changes included (the sidecar reads the disk). Reads never ask in any mode, as the
    // built-in read_file does; `approvalRequired` is for the extension's tools alone ("off").
    tools: TOOLS,
    approvalRequired: builtin ? settings.approvalRequired.filter((name) => name !== "read_file") : settings.approvalRequired,
    ...(builtin ? { builtinTools: { mode, tools: [...SIDECAR_TOOLS] } } : {}),
    ...modelParams(settings),
  };
}

/** The run/start fields that choose the model: the stored profile, the assembly profile. */
export function modelParams(settings: Settings): Pick<RunStartParams, "profileId" | "profile"> {
  return {
    ...(settings.profile ? { profileId: settings.profile } : {}),
    ...(Object.keys(settings.assembly).length > 0 ? { profile: { assembly: settings.assembly } } : {}),
  };
}
