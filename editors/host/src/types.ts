// The wire contract, generated from the sidecar's models (protocol/typescript/context-sidecar.ts).
// Re-exported by relative path, never copied: a regenerated contract changes these types, and a
// host that no longer matches the server stops compiling.
//
// Type-only on purpose: the generated file lives outside any package.json, so under NodeNext it
// is a CommonJS module while this package is ESM; only its types cross the boundary at runtime.
import type * as Contract from "../../../protocol/typescript/context-sidecar.js";

export type * from "../../../protocol/typescript/context-sidecar.js";

/** The protocol version this host was compiled against (checked against the generated literal). */
export const PROTOCOL_VERSION: typeof Contract.PROTOCOL_VERSION = 1;
