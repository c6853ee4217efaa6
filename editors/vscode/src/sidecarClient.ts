// A small, self-contained client for `context-sidecar serve` (JSON-RPC 2.0, LSP framing, stdio).
// The subset of editors/host/src/client.ts an editor needs: spawn + initialize, requests,
// run/event fan-out, the tool/execute handler, shutdown/exit with a kill on timeout.
// No `vscode` import: it is tested in plain node.
import { spawn, type ChildProcess } from "node:child_process";
import * as rpc from "vscode-jsonrpc/node";

/** The protocol version this client speaks (the sidecar's `protocolVersion`). */
export const PROTOCOL_VERSION = 1;
/** JSON-RPC code of a request cancelled with `$/cancelRequest`. */
export const REQUEST_CANCELLED = -32800;
/** Code used locally when the sidecar is gone. */
export const CONNECTION_CLOSED = -32099;

// --- the slice of the wire contract used here (protocol/typescript/context-sidecar.ts) -------

export interface TextPart {
  type: "text";
  text: string;
}

export interface Dashboard {
  window: number;
  reservedOutput: number;
  availableInput: number;
  used: number;
  free: number;
  categories: Record<string, number>;
  summary: string;
}

export interface ServerCapabilities {
  protocolVersion: number;
  serverVersion: string;
  schemaHash: string;
  methods: string[];
  storePath: string;
  [key: string]: unknown;
}

export interface RunEvent {
  runId: string;
  sessionId: string;
  seq: number;
  time: string;
  type: string;
  payload: Record<string, unknown>;
}

/** `run/lagged`: live events of a run paused because this client read too slowly. */
export interface RunLagged {
  runId: string;
  lastSentSeq: number;
  retryAfterMs: number;
  [key: string]: unknown;
}

export interface ToolDefinition {
  name: string;
  description?: string;
  parameters?: Record<string, unknown>;
}

export interface HostSource {
  id: string;
  title?: string;
  text: string;
  priority?: number;
}

export interface ToolExecuteParams {
  runId: string;
  callId: string;
  name: string;
  arguments: Record<string, unknown>;
}

export interface ToolExecuteResult {
  content: TextPart[];
  isError?: boolean;
}

export interface Session {
  sessionId: string;
  title: string;
  workspaceRoots: string[];
  headSeq: number;
  [key: string]: unknown;
}

export interface Run {
  runId: string;
  sessionId: string;
  status: string;
  [key: string]: unknown;
}

/** Requests this client sends, with their params and results. */
export interface Requests {
  "session/create": { params: { title?: string; workspaceRoots?: string[] }; result: Session };
  "context/assemble": {
    params: {
      sessionId: string;
      userTurn: TextPart[];
      tools?: ToolDefinition[];
      sources?: HostSource[];
      cwd?: string | null;
      mentionedPaths?: string[];
    };
    result: { dashboard: Dashboard; tokenizer: string; throughSeq: number; [key: string]: unknown };
  };
  "run/start": {
    params: {
      sessionId: string;
      userTurn: TextPart[];
      tools?: ToolDefinition[];
      profileId?: string;
      maxRounds?: number;
      script?: Record<string, unknown>;
    };
    result: { runId: string; sessionId: string; inputId: string };
  };
  "run/cancel": { params: { runId: string }; result: Run };
  "run/get": { params: { runId: string }; result: Run };
  "snapshot/get": { params: { snapshotId: string }; result: Record<string, unknown> };
}
export type RequestMethod = keyof Requests;

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface Disposable {
  dispose(): void;
}

export interface StartOptions {
  /** argv of the sidecar, e.g. `["context-sidecar", "serve"]`. */
  command: string[];
  /** `--store DIR`. */
  store?: string;
  cwd?: string;
  env?: Record<string, string>;
  clientName?: string;
  startTimeoutMs?: number;
  /** Receives the sidecar's stderr, line by line. */
  onStderr?: (line: string) => void;
  /** Receives every JSON-RPC message (vscode-jsonrpc verbose trace) when given. */
  onTrace?: (line: string) => void;
}

/** A JSON-RPC error answered by the sidecar (or raised locally when it is gone). */
export class SidecarError extends Error {
  readonly code: number;
  readonly data: unknown;

  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.name = "SidecarError";
    this.code = code;
    this.data = data;
  }
}

function toSidecarError(err: unknown): unknown {
  if (err instanceof rpc.ResponseError) return new SidecarError(err.code, err.message, err.data);
  return err;
}

/** A running sidecar child and the connection to it. */
export class SidecarClient {
  readonly capabilities: ServerCapabilities;
  readonly process: ChildProcess;
  /** Resolves once the child has exited. */
  readonly exited: Promise<ExitInfo>;

  private readonly connection: rpc.MessageConnection;
  private readonly eventHandlers = new Set<(event: RunEvent) => void>();
  private readonly completed = new Map<string, RunEvent>();
  private readonly completionWaiters = new Map<string, Set<(event: RunEvent) => void>>();
  /** The highest seq dispatched per run: a catch-up replay's overlap is dropped. */
  private readonly lastSeqs = new Map<string, number>();
  private readonly timers = new Set<NodeJS.Timeout>();
  /** How many times the sidecar paused live events for this client (each one caught up). */
  lagged = 0;
  private exitInfo: ExitInfo | undefined;
  private closing: Promise<ExitInfo> | undefined;

  private constructor(
    child: ChildProcess,
    connection: rpc.MessageConnection,
    exited: Promise<ExitInfo>,
    capabilities: ServerCapabilities,
  ) {
    this.process = child;
    this.connection = connection;
    this.exited = exited;
    this.capabilities = capabilities;
    void exited.then((info) => {
      this.exitInfo = info;
      connection.dispose();
    });
    connection.onNotification("run/event", (event: RunEvent) => this.dispatch(event));
    connection.onNotification("run/lagged", (lagged: RunLagged) => this.catchUp(lagged));
  }

  /** Spawn the sidecar and complete `initialize` / `initialized`. */
  static async start(opts: StartOptions): Promise<SidecarClient> {
    const argv = [...opts.command];
    if (opts.store !== undefined && opts.store !== "") argv.push("--store", opts.store);
    const [file, ...args] = argv;
    if (file === undefined) throw new Error("contextSidecar.command is empty");

    const child = spawn(file, args, {
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...process.env, ...(opts.env ?? {}) },
      ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
    });
    let stderrTail = "";
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      stderrTail = (stderrTail + chunk).slice(-8192);
      if (opts.onStderr) for (const line of chunk.split("\n")) if (line.trim() !== "") opts.onStderr(line);
    });
    const exited = new Promise<ExitInfo>((resolve) => {
      child.once("close", (code, signal) => resolve({ code, signal }));
      child.once("error", () => resolve({ code: null, signal: null }));
    });
    const failed = new Promise<never>((_, reject) => {
      child.once("error", (err) => reject(new Error(`could not start ${argv.join(" ")}: ${err.message}`)));
      child.once("exit", (code, signal) =>
        reject(new Error(`sidecar exited during start (code ${code}, signal ${signal})\n${stderrTail.trim()}`)),
      );
    });
    failed.catch(() => undefined);
    if (!child.stdout || !child.stdin) throw new Error("no stdio pipes");
    child.stdin.on("error", () => undefined);

    const connection = rpc.createMessageConnection(
      new rpc.StreamMessageReader(child.stdout),
      new rpc.StreamMessageWriter(child.stdin),
    );
    const traceSink = opts.onTrace;
    if (traceSink !== undefined) {
      void connection.trace(rpc.Trace.Verbose, {
        log: (message: unknown, data?: string) => {
          traceSink(typeof message === "string" ? (data ? `${message}\n${data}` : message) : JSON.stringify(message));
        },
      });
    }
    connection.listen();

    const timeoutMs = opts.startTimeoutMs ?? 20_000;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`sidecar did not initialize within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      const result = (await Promise.race([
        connection.sendRequest("initialize", {
          processId: process.pid,
          clientInfo: { name: opts.clientName ?? "context-sidecar-vscode" },
          capabilities: {},
        }),
        failed,
        timeout,
      ])) as { capabilities?: { experimental?: { contextSidecar?: ServerCapabilities } } };
      const caps = result.capabilities?.experimental?.contextSidecar;
      if (caps === undefined) throw new Error("initialize answered without capabilities.experimental.contextSidecar");
      if (caps.protocolVersion !== PROTOCOL_VERSION) {
        throw new Error(`sidecar speaks protocol ${caps.protocolVersion}, this extension ${PROTOCOL_VERSION}`);
      }
      await connection.sendNotification("initialized", {});
      return new SidecarClient(child, connection, exited, caps);
    } catch (err) {
      connection.dispose();
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
      throw toSidecarError(err);
    } finally {
      clearTimeout(timer);
    }
  }

  get pid(): number | undefined {
    return this.process.pid;
  }

  get running(): boolean {
    return this.exitInfo === undefined && this.closing === undefined;
  }

  /** A typed request; aborting `signal` sends `$/cancelRequest`. */
  async request<M extends RequestMethod>(
    method: M,
    params: Requests[M]["params"],
    signal?: AbortSignal,
  ): Promise<Requests[M]["result"]> {
    if (!this.running) throw new SidecarError(CONNECTION_CLOSED, "sidecar is not running");
    const source = signal ? new rpc.CancellationTokenSource() : undefined;
    const onAbort = (): void => source?.cancel();
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const pending = source
        ? this.connection.sendRequest(method, params, source.token)
        : this.connection.sendRequest(method, params);
      return (await pending) as Requests[M]["result"];
    } catch (err) {
      throw toSidecarError(err);
    } finally {
      signal?.removeEventListener("abort", onAbort);
      source?.dispose();
    }
  }

  /** Every `run/event` notification. */
  onRunEvent(handler: (event: RunEvent) => void): Disposable {
    this.eventHandlers.add(handler);
    return { dispose: () => this.eventHandlers.delete(handler) };
  }

  /** Answer `tool/execute`; `signal` aborts when the sidecar withdraws the call. */
  onToolExecute(
    handler: (params: ToolExecuteParams, signal: AbortSignal) => ToolExecuteResult | Promise<ToolExecuteResult>,
  ): Disposable {
    return this.connection.onRequest("tool/execute", async (params: ToolExecuteParams, token: rpc.CancellationToken) => {
      const controller = new AbortController();
      if (token.isCancellationRequested) controller.abort();
      else token.onCancellationRequested(() => controller.abort());
      return handler(params, controller.signal);
    });
  }

  /** Resolves with the run's top-level `run.completed` event (already seen or still to come). */
  waitForCompletion(runId: string, timeoutMs = 60_000): Promise<RunEvent> {
    const seen = this.completed.get(runId);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const waiters = this.completionWaiters.get(runId) ?? new Set<(event: RunEvent) => void>();
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

  private dispatch(event: RunEvent): void {
    if (event.seq <= (this.lastSeqs.get(event.runId) ?? 0)) return;
    this.lastSeqs.set(event.runId, event.seq);
    for (const handler of [...this.eventHandlers]) {
      try {
        handler(event);
      } catch {
        // A failing handler must not stop the others.
      }
    }
    if (event.type === "run.completed" && event.payload["agent"] === undefined) {
      this.completed.set(event.runId, event);
      const waiters = this.completionWaiters.get(event.runId);
      this.completionWaiters.delete(event.runId);
      for (const waiter of waiters ?? []) waiter(event);
    }
  }

  /** The sidecar paused a run's live events: after the delay it asks for, subscribe again from
   *  the last event dispatched; the journal replays the rest, and nothing shows twice. */
  private catchUp(lagged: RunLagged): void {
    this.lagged += 1;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (this.closing !== undefined || this.exitInfo !== undefined) return;
      const afterSeq = this.lastSeqs.get(lagged.runId) ?? Math.max(lagged.lastSentSeq, 0);
      this.connection.sendRequest("run/subscribe", { runId: lagged.runId, afterSeq }).catch(() => undefined);
    }, Math.max(lagged.retryAfterMs, 0));
    this.timers.add(timer);
  }

  /** `shutdown` + `exit`, then wait for the exit; SIGKILL after `timeoutMs`. Idempotent. */
  close(timeoutMs = 5_000): Promise<ExitInfo> {
    this.closing ??= this.doClose(timeoutMs);
    return this.closing;
  }

  private async doClose(timeoutMs: number): Promise<ExitInfo> {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    const killTimer = setTimeout(() => {
      if (this.exitInfo === undefined) this.process.kill("SIGKILL");
    }, timeoutMs);
    try {
      if (this.exitInfo === undefined) {
        try {
          await Promise.race([this.connection.sendRequest("shutdown"), this.exited]);
          if (this.exitInfo === undefined) await this.connection.sendNotification("exit");
        } catch {
          // Gone already, or the pipe broke: the exit/kill paths below still apply.
        }
        const settled = await Promise.race([this.exited, new Promise<undefined>((r) => setTimeout(() => r(undefined), 1_000))]);
        if (settled === undefined) this.process.stdin?.end();
      }
      return await this.exited;
    } finally {
      clearTimeout(killTimer);
      this.connection.dispose();
    }
  }
}
