import { spawn, type ChildProcess } from "node:child_process";
import rpc from "vscode-jsonrpc/node";
import type { CancellationToken, MessageConnection } from "vscode-jsonrpc/node";

import {
  PROTOCOL_VERSION,
  type ClientRequestMethod,
  type ClientRequests,
  type ErrorData,
  type RunEvent,
  type RunLagged,
  type RunSubscribeResult,
  type ServerCapabilities,
  type ServerRequestMethod,
  type ServerRequests,
} from "./types.js";

const { createMessageConnection, StreamMessageReader, StreamMessageWriter, ResponseError, CancellationTokenSource, Trace } =
  rpc;

/** JSON-RPC code of a request cancelled with `$/cancelRequest`. */
export const REQUEST_CANCELLED = -32800;
/** Code used locally when the sidecar is gone (connection closed, process exited). */
export const CONNECTION_CLOSED = -32099;

/** A JSON-RPC error answered by the sidecar (or raised locally when the connection is gone). */
export class SidecarError extends Error {
  readonly code: number;
  readonly data: ErrorData | undefined;

  constructor(code: number, message: string, data?: ErrorData) {
    super(message);
    this.name = "SidecarError";
    this.code = code;
    this.data = data;
  }

  /** The dotted domain code (`session.not_found`, `request.cancelled`, ...), when the server sent one. */
  get dataCode(): string | undefined {
    return this.data?.code;
  }
}

export interface Disposable {
  dispose(): void;
}

export interface StartOptions {
  /** argv of the sidecar; default `["context-sidecar", "serve"]`. */
  command?: string[];
  /** Extra arguments appended after `command` (and `--store`). */
  args?: string[];
  /** `--store DIR`. */
  store?: string;
  /** Added to the inherited environment. */
  env?: Record<string, string>;
  /** Working directory of the child. */
  cwd?: string;
  /** The client's capabilities sent in `initialize` (e.g. `{experimental: {contextSidecar: {assembly: true}}}`). */
  capabilities?: object;
  /** `pipe` (default): captured, the tail is kept for diagnostics (`stderrTail`); `inherit`: the host's stderr. */
  stderr?: "pipe" | "inherit" | "ignore";
  /** `clientInfo.name` sent in `initialize`. */
  clientName?: string;
  /** Give up starting after this long (default 20 s). */
  startTimeoutMs?: number;
  /** Receives the sidecar's stderr line by line (with `stderr: "pipe"`), e.g. for an editor's log. */
  onStderrLine?: (line: string) => void;
  /** Receives every JSON-RPC message, both directions (vscode-jsonrpc's verbose trace). */
  onTrace?: (line: string) => void;
}

export type ServerRequestHandler<M extends ServerRequestMethod> = (
  params: ServerRequests[M]["params"],
  signal: AbortSignal,
) => ServerRequests[M]["result"] | Promise<ServerRequests[M]["result"]>;

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

const STDERR_TAIL_BYTES = 64 * 1024;

function toSidecarError(err: unknown): unknown {
  if (err instanceof SidecarError) return err;
  if (err instanceof ResponseError) {
    return new SidecarError(err.code, err.message, (err.data ?? undefined) as ErrorData | undefined);
  }
  return err;
}

function cancelledError(): SidecarError {
  return new SidecarError(REQUEST_CANCELLED, "request cancelled", { code: "request.cancelled" });
}

function tokenToSignal(token: CancellationToken): AbortSignal {
  const controller = new AbortController();
  if (token.isCancellationRequested) controller.abort();
  else token.onCancellationRequested(() => controller.abort());
  return controller.signal;
}

/**
 * A running context-sidecar child process and a typed JSON-RPC connection to it.
 *
 * `SidecarHost.start()` spawns it and completes `initialize` / `initialized`; `close()` sends
 * `shutdown` + `exit` and waits until the process is gone (killing it after 5 s).
 */
export class SidecarHost {
  /** `capabilities.experimental.contextSidecar` from the `initialize` answer. */
  readonly capabilities: ServerCapabilities;
  /** The full `initialize` result, as sent. */
  readonly initializeResult: Record<string, unknown>;
  readonly process: ChildProcess;
  /** Resolves once the child process has exited. */
  readonly exited: Promise<ExitInfo>;

  private readonly connection: MessageConnection;
  private readonly runEventHandlers = new Set<(event: RunEvent) => void>();
  private readonly runLaggedHandlers = new Set<(lagged: RunLagged) => void>();
  /** Highest seq delivered per run: events at or below it are duplicates and dropped. */
  private readonly lastSeqs = new Map<string, number>();
  private readonly completed = new Map<string, RunEvent>();
  private readonly completionWaiters = new Map<string, Set<(event: RunEvent) => void>>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly stderrChunks: Buffer[];
  private closing: Promise<ExitInfo> | undefined;
  private exitInfo: ExitInfo | undefined;
  private readonly killOnHostExit: () => void;

  private constructor(
    child: ChildProcess,
    connection: MessageConnection,
    exited: Promise<ExitInfo>,
    stderrChunks: Buffer[],
    initializeResult: Record<string, unknown>,
    killOnHostExit: () => void,
  ) {
    this.process = child;
    this.connection = connection;
    this.exited = exited;
    this.stderrChunks = stderrChunks;
    this.initializeResult = initializeResult;
    this.killOnHostExit = killOnHostExit;
    const caps = initializeResult["capabilities"] as { experimental?: { contextSidecar?: ServerCapabilities } };
    const block = caps.experimental?.contextSidecar;
    if (block === undefined) throw new Error("initialize answered without capabilities.experimental.contextSidecar");
    this.capabilities = block;
    void exited.then((info) => {
      this.exitInfo = info;
      // Pending requests reject instead of hanging when the sidecar dies.
      connection.dispose();
    });

    connection.onNotification("run/event", (params: RunEvent) => this.dispatchEvent(params));
    connection.onNotification("run/lagged", (params: RunLagged) => this.dispatchLagged(params));
  }

  /** Spawn the sidecar and complete the `initialize` handshake. */
  static async start(opts: StartOptions = {}): Promise<SidecarHost> {
    const argv = [...(opts.command ?? ["context-sidecar", "serve"])];
    if (opts.store !== undefined) argv.push("--store", opts.store);
    argv.push(...(opts.args ?? []));
    const [file, ...rest] = argv;
    if (file === undefined) throw new Error("empty command");

    const stderrMode = opts.stderr ?? "pipe";
    const child = spawn(file, rest, {
      stdio: ["pipe", "pipe", stderrMode],
      env: { ...process.env, ...(opts.env ?? {}) },
      ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
    });
    const stderrChunks: Buffer[] = [];
    if (child.stderr) {
      let size = 0;
      let partial = "";
      const onLine = opts.onStderrLine;
      child.stderr.on("data", (chunk: Buffer) => {
        stderrChunks.push(chunk);
        size += chunk.length;
        while (size > STDERR_TAIL_BYTES && stderrChunks.length > 1) size -= stderrChunks.shift()!.length;
        if (onLine === undefined) return;
        const lines = (partial + chunk.toString("utf8")).split("\n");
        partial = lines.pop() ?? "";
        for (const line of lines) if (line.trim() !== "") onLine(line);
      });
    }
    const tail = (): string => Buffer.concat(stderrChunks).toString("utf8").trim();

    const exited = new Promise<ExitInfo>((resolve) => {
      // "close", not "exit": by then stdout is drained, so no answer is lost.
      child.once("close", (code, signal) => resolve({ code, signal }));
      child.once("error", () => resolve({ code: null, signal: null }));
    });
    // The sidecar also exits when `initialize.processId` dies; this covers a clean host exit
    // before `close()` (and a sidecar that never got as far as `initialize`).
    const killOnHostExit = (): void => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    };
    process.once("exit", killOnHostExit);

    const failed = new Promise<never>((_, reject) => {
      child.once("error", (err) => reject(new Error(`could not start ${argv.join(" ")}: ${err.message}`)));
      child.once("exit", (code, signal) =>
        reject(new Error(`sidecar exited during start (code ${code}, signal ${signal})\n${tail()}`)),
      );
    });
    failed.catch(() => undefined);

    if (!child.stdout || !child.stdin) throw new Error("no stdio pipes");
    const connection = createMessageConnection(
      new StreamMessageReader(child.stdout),
      new StreamMessageWriter(child.stdin),
    );
    // A write after the child is gone must not crash the host.
    child.stdin.on("error", () => undefined);
    const traceSink = opts.onTrace;
    if (traceSink !== undefined) {
      void connection.trace(Trace.Verbose, {
        log: (message: unknown, data?: string) =>
          traceSink(typeof message === "string" ? (data ? `${message}\n${data}` : message) : JSON.stringify(message)),
      });
    }
    connection.listen();

    const timeoutMs = opts.startTimeoutMs ?? 20_000;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`sidecar did not initialize within ${timeoutMs} ms\n${tail()}`)), timeoutMs);
    });
    try {
      const result = (await Promise.race([
        connection.sendRequest("initialize", {
          processId: process.pid,
          clientInfo: { name: opts.clientName ?? "@context-sidecar/host" },
          capabilities: opts.capabilities ?? {},
        }),
        failed,
        timeout,
      ])) as Record<string, unknown>;
      await connection.sendNotification("initialized", {});
      const host = new SidecarHost(child, connection, exited, stderrChunks, result, killOnHostExit);
      if (host.capabilities.protocolVersion !== PROTOCOL_VERSION) {
        await host.close();
        throw new Error(
          `sidecar speaks protocol ${host.capabilities.protocolVersion}, this host ${PROTOCOL_VERSION}`,
        );
      }
      return host;
    } catch (err) {
      connection.dispose();
      killOnHostExit();
      process.removeListener("exit", killOnHostExit);
      await exited;
      throw toSidecarError(err);
    } finally {
      clearTimeout(timer);
    }
  }

  get pid(): number | undefined {
    return this.process.pid;
  }

  /** False once `close()` was called or the process has exited. */
  get running(): boolean {
    return this.exitInfo === undefined && this.closing === undefined;
  }

  /** The last 64 KiB the sidecar wrote to stderr (when started with `stderr: "pipe"`). */
  stderrTail(): string {
    return Buffer.concat(this.stderrChunks).toString("utf8");
  }

  // --- requests ----------------------------------------------------------------------------

  /**
   * A typed request. Aborting `signal` sends `$/cancelRequest`; the promise then rejects with
   * the sidecar's answer (`SidecarError` code -32800, `request.cancelled`) or resolves if the
   * work had already finished. Errors reject with `SidecarError {code, message, data}`.
   */
  async request<M extends ClientRequestMethod>(
    method: M,
    params: ClientRequests[M]["params"],
    signal?: AbortSignal,
  ): Promise<ClientRequests[M]["result"]> {
    if (this.exitInfo !== undefined || this.closing !== undefined) {
      throw new SidecarError(CONNECTION_CLOSED, `sidecar is ${this.exitInfo ? "gone" : "closing"}`);
    }
    if (signal?.aborted) throw cancelledError();
    const source = signal ? new CancellationTokenSource() : undefined;
    const onAbort = (): void => source?.cancel();
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const pending = source
        ? this.connection.sendRequest(method, params, source.token)
        : this.connection.sendRequest(method, params);
      return (await pending) as ClientRequests[M]["result"];
    } catch (err) {
      throw toSidecarError(err);
    } finally {
      signal?.removeEventListener("abort", onAbort);
      source?.dispose();
    }
  }

  // --- server -> client --------------------------------------------------------------------

  /** Every `run/event` (after de-duplication by seq). */
  onRunEvent(handler: (event: RunEvent) => void): Disposable {
    this.runEventHandlers.add(handler);
    return { dispose: () => this.runEventHandlers.delete(handler) };
  }

  /** Every `run/lagged` (the host re-subscribes by itself after `retryAfterMs`). */
  onRunLagged(handler: (lagged: RunLagged) => void): Disposable {
    this.runLaggedHandlers.add(handler);
    return { dispose: () => this.runLaggedHandlers.delete(handler) };
  }

  /** Run tools for runs. `signal` aborts when the sidecar withdraws the call (run cancelled, timeout). */
  onToolExecute(handler: ServerRequestHandler<"tool/execute">): Disposable {
    return this.onServerRequest("tool/execute", handler);
  }

  /** Approve or deny tool calls named in `approvalRequired`. */
  onApproval(handler: ServerRequestHandler<"approval/request">): Disposable {
    return this.onServerRequest("approval/request", handler);
  }

  /** Assemble sub-agent prompts (declare `capabilities.experimental.contextSidecar.assembly`). */
  onAssembly(handler: ServerRequestHandler<"assembly/request">): Disposable {
    return this.onServerRequest("assembly/request", handler);
  }

  private onServerRequest<M extends ServerRequestMethod>(method: M, handler: ServerRequestHandler<M>): Disposable {
    return this.connection.onRequest(method, async (params: ServerRequests[M]["params"], token: CancellationToken) => {
      try {
        return await handler(params, tokenToSignal(token));
      } catch (err) {
        if (err instanceof SidecarError) throw new ResponseError(err.code, err.message, err.data);
        throw err;
      }
    });
  }

  // --- runs ----------------------------------------------------------------------------------

  /**
   * `run/subscribe {runId, afterSeq}`: the journal after `afterSeq`, then live events. The host
   * remembers the last seq it delivered for the run, drops duplicates, and on `run/lagged`
   * re-subscribes from `lastSentSeq` after `retryAfterMs`.
   */
  async subscribe(runId: string, afterSeq = 0, signal?: AbortSignal): Promise<RunSubscribeResult> {
    this.lastSeqs.set(runId, afterSeq);
    return this.request("run/subscribe", { runId, afterSeq }, signal);
  }

  /** The highest seq delivered for a run, if any. */
  lastSeq(runId: string): number | undefined {
    return this.lastSeqs.get(runId);
  }

  /** Resolves with the run's `run.completed` event (already seen or still to come). */
  waitForCompletion(runId: string, timeoutMs = 30_000): Promise<RunEvent> {
    const seen = this.completed.get(runId);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const waiters = this.completionWaiters.get(runId) ?? new Set();
      this.completionWaiters.set(runId, waiters);
      const done = (event: RunEvent): void => {
        clearTimeout(timer);
        resolve(event);
      };
      const timer = setTimeout(() => {
        waiters.delete(done);
        reject(new Error(`run ${runId} did not complete within ${timeoutMs} ms`));
      }, timeoutMs);
      waiters.add(done);
    });
  }

  private dispatchEvent(event: RunEvent): void {
    const last = this.lastSeqs.get(event.runId) ?? 0;
    if (event.seq <= last) return;
    this.lastSeqs.set(event.runId, event.seq);
    for (const handler of [...this.runEventHandlers]) {
      try {
        handler(event);
      } catch (err) {
        queueMicrotask(() => {
          throw err;
        });
      }
    }
    if (event.type === "run.completed" && event.payload["agent"] === undefined) {
      this.completed.set(event.runId, event);
      const waiters = this.completionWaiters.get(event.runId);
      this.completionWaiters.delete(event.runId);
      for (const waiter of waiters ?? []) waiter(event);
    }
  }

  private dispatchLagged(lagged: RunLagged): void {
    for (const handler of [...this.runLaggedHandlers]) handler(lagged);
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (this.closing !== undefined || this.exitInfo !== undefined) return;
      const afterSeq = Math.max(lagged.lastSentSeq, 0);
      // Keep the dedup mark: events replayed at or below what was already delivered are dropped.
      this.request("run/subscribe", { runId: lagged.runId, afterSeq }).catch(() => undefined);
    }, Math.max(lagged.retryAfterMs, 0));
    this.timers.add(timer);
  }

  // --- lifecycle -----------------------------------------------------------------------------

  /**
   * `shutdown` + `exit`, then wait for the process to exit; it is killed if it is still there
   * after `timeoutMs` (default 5 s). Safe to call more than once.
   */
  close(timeoutMs = 5_000): Promise<ExitInfo> {
    this.closing ??= this.doClose(timeoutMs);
    return this.closing;
  }

  private async doClose(timeoutMs: number): Promise<ExitInfo> {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    const deadline = Date.now() + timeoutMs;
    let killTimer: NodeJS.Timeout | undefined;
    const killed = new Promise<void>((resolve) => {
      killTimer = setTimeout(() => {
        if (this.exitInfo === undefined) this.process.kill("SIGKILL");
        resolve();
      }, timeoutMs);
    });
    try {
      if (this.exitInfo === undefined) {
        const graceful = (async () => {
          await this.connection.sendRequest("shutdown");
          await this.connection.sendNotification("exit");
        })().catch(() => undefined);
        await Promise.race([graceful, this.exited, killed]);
        // If the sidecar does not exit on its own, closing stdin is its other exit path.
        if (this.exitInfo === undefined && Date.now() < deadline) {
          await Promise.race([this.exited, new Promise((r) => setTimeout(r, 200))]);
          if (this.exitInfo === undefined) this.process.stdin?.end();
        }
      }
      const info = await this.exited;
      return info;
    } finally {
      clearTimeout(killTimer);
      process.removeListener("exit", this.killOnHostExit);
      this.connection.dispose();
    }
  }
}
