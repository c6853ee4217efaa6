// One run as chat items, fed its run/events: the answer streamed per round (thinking apart),
// each tool call a card (status, approval, output), the model's todo list (one checklist per
// run, replaced by each `plan.updated`; its calls get no card unless one fails), the turn's
// usage line and, when it fails, why. Pure (no `vscode`): the controller posts what `apply` returns.
import { addKeepEverything, turnUsageLine, type TurnUsage } from "../format";
import { planUpdated, toolCall, toolResult, type ApprovalRequestParams, type CacheAccounting, type KeepEverythingCall, type RunEvent } from "../host";
import { newCard, partsText, withResult } from "./cards";
import { PLAN_TOOL, planItem, planSteps } from "./plan";
import type { AssistantItem, ChatItem, ToolCard } from "./protocol";

export class RunItems {
  private readonly cards = new Map<string, ToolCard>();
  private readonly answers = new Map<number, AssistantItem>();
  /** `update_plan` calls: shown as the plan, as a card only when one fails. */
  private readonly planCalls = new Set<string>();
  private readonly usage: TurnUsage = {
    inputTokens: 0,
    outputTokens: 0,
    cacheReadTokens: 0,
    predictedInputTokens: 0,
    predictedReadTokens: 0,
    cost: null,
    keepEverything: null,
  };
  private priced = true;
  /** Set by run.completed: "completed" | "cancelled" | "failed". */
  status: string | undefined;

  constructor(readonly runId: string) {}

  get finished(): boolean {
    return this.status !== undefined;
  }

  card(callId: string): ToolCard | undefined {
    return this.cards.get(callId);
  }

  /** The items `event` changed (none for events the chat does not show). */
  apply(event: RunEvent): ChatItem[] {
    const p = event.payload;
    if (p["agent"] !== undefined) return []; // a sub-agent's own stream stays in its tool card
    switch (event.type) {
      case "model.delta": {
        const round = typeof p["round"] === "number" ? p["round"] : 0;
        const answer = this.answer(round);
        if (typeof p["text"] === "string") answer.text += p["text"];
        if (typeof p["reasoning"] === "string") answer.thinking += p["reasoning"];
        return [answer];
      }
      case "model.completed": {
        const round = typeof p["round"] === "number" ? p["round"] : 0;
        this.addUsage(p["usage"], p["predictedCache"]);
        const keep = p["keepEverything"] as KeepEverythingCall | undefined;
        if (keep) this.usage.keepEverything = addKeepEverything(this.usage.keepEverything, keep);
        const answer = this.answers.get(round);
        if (!answer) return [];
        answer.streaming = false;
        return [answer];
      }
      case "tool.callRequested": {
        const call = toolCall(event)!;
        const card = newCard(call.callId, call.name, call.arguments, call.title);
        this.cards.set(call.callId, card);
        if (call.name !== PLAN_TOOL) return [card];
        this.planCalls.add(call.callId);
        return [];
      }
      case "plan.updated": {
        const plan = planUpdated(event)!;
        return [planItem(`${this.runId}:plan`, planSteps(plan.entries))];
      }
      case "tool.approval": {
        const callId = String(p["callId"]);
        const card = this.cards.get(callId);
        if (!card || p["verdict"] !== "refuse") return [];
        return [this.put({ ...card, status: "denied", reason: String(p["reason"] ?? `refused in ${String(p["mode"])} mode`) })];
      }
      case "tool.resultStored": {
        const result = toolResult(event)!;
        const card = this.cards.get(result.callId);
        if (!card) return [];
        if (this.planCalls.has(result.callId) && !result.isError) return [];
        // a built-in call carries what the model read; a host call's result is read back (resultText)
        if (Array.isArray(result.content)) return [this.put(withResult(card, partsText(result.content), result.isError))];
        if (result.isError) return [this.put(withResult(card, card.reason ?? "failed or not approved", true))];
        return [this.put({ ...card, status: "done" })];
      }
      case "run.completed": {
        this.status = String(p["status"]);
        const changed: ChatItem[] = [];
        for (const answer of this.answers.values()) {
          if (answer.streaming) changed.push({ ...answer, streaming: false }), (answer.streaming = false);
        }
        for (const card of this.cards.values()) {
          if (this.planCalls.has(card.callId)) continue;
          if (card.status === "running" || card.status === "awaiting") changed.push(this.put({ ...card, status: "failed", reason: this.status }));
        }
        changed.push({ kind: "usage", id: `${this.runId}:usage`, line: `${turnUsageLine(this.usage)}${this.status === "completed" ? "" : ` · ${this.status}`}` });
        const error = p["error"] as { code?: string; message?: string } | undefined;
        if (this.status === "failed" && error) {
          changed.push({ kind: "notice", id: `${this.runId}:error`, level: "error", text: `Run failed: ${error.message ?? ""} (\`${error.code ?? "?"}\`)` });
        }
        return changed;
      }
      default:
        return [];
    }
  }

  /** The card of a call that waits on the user (created if its event has not come yet). */
  awaiting(request: ApprovalRequestParams, summary: string, detail: string): ToolCard {
    const card = this.cards.get(request.callId) ?? newCard(request.callId, request.name, request.arguments);
    const edit = request.change !== undefined && request.change !== null && !request.change.omitted;
    return this.put({ ...card, status: "awaiting", approval: { summary, detail, edit } });
  }

  /** The approval was answered or withdrawn: the card runs (or waits for its result). */
  settled(callId: string, approved: boolean, reason?: string): ToolCard | undefined {
    const card = this.cards.get(callId);
    if (!card || card.status !== "awaiting") return undefined;
    const next: ToolCard = { ...card, status: approved ? "running" : "denied" };
    delete next.approval;
    if (!approved && reason) next.reason = reason;
    return this.put(next);
  }

  /** A host tool's result, read back from history. */
  resultText(callId: string, text: string, isError: boolean): ToolCard | undefined {
    const card = this.cards.get(callId);
    return card ? this.put(withResult(card, text, isError)) : undefined;
  }

  private put(card: ToolCard): ToolCard {
    this.cards.set(card.callId, card);
    return card;
  }

  private answer(round: number): AssistantItem {
    let answer = this.answers.get(round);
    if (!answer) {
      answer = { kind: "assistant", id: `${this.runId}:r${round}`, text: "", thinking: "", streaming: true };
      this.answers.set(round, answer);
    }
    return answer;
  }

  private addUsage(usage: unknown, predicted: unknown): void {
    const u = (usage ?? {}) as Record<string, unknown>;
    const n = (key: string): number => (typeof u[key] === "number" ? (u[key] as number) : 0);
    this.usage.inputTokens += n("inputTokens");
    this.usage.outputTokens += n("outputTokens");
    this.usage.cacheReadTokens += n("cacheReadTokens");
    const cache = predicted as CacheAccounting | undefined;
    if (!cache) return;
    this.usage.predictedInputTokens += cache.inputTokens;
    this.usage.predictedReadTokens += cache.readTokens;
    if (cache.cost && this.priced) this.usage.cost = (this.usage.cost ?? 0) + cache.cost.total;
    else {
      this.priced = false;
      this.usage.cost = null;
    }
  }
}
