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
