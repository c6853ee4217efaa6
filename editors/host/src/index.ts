export {
  SidecarHost,
  SidecarError,
  REQUEST_CANCELLED,
  CONNECTION_CLOSED,
  type StartOptions,
  type ServerRequestHandler,
  type Disposable,
  type ExitInfo,
} from "./client.js";
export * from "./types.js";
export { RECOVERABLE_VISIBILITIES, recoverableItems, ledgerChanges, assemblyDiff, type AssemblyDiff } from "./explain.js";
export { toolCall, toolApproval, toolResult, planUpdated, approvalSummary } from "./tools.js";
export {
  NO_FILE_REWIND,
  REWIND_CHOICES,
  checkpointAt,
  takenAfter,
  diffCheckpoint,
  listCheckpoints,
  previewRewind,
  readBlobText,
  restoreCheckpoint,
  restoreFlags,
  rewindTo,
  type RewindChoice,
  type RewindPreview,
} from "./rewind.js";
