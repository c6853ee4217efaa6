"""Model providers: one interface (:mod:`.base`) and its HTTP implementations.

``OpenAIProvider`` speaks Chat Completions (OpenAI and compatible servers),
``OpenAIResponsesProvider`` the Responses API (``POST /responses``), ``AnthropicProvider``
the Messages API and ``GeminiProvider`` the Gemini API's ``streamGenerateContent``; all
stream over SSE (:mod:`.sse`) with the retry and cleanup rules of :mod:`.transport`.
``resolve_secret`` finds their API keys.
"""

from __future__ import annotations

from sidecar.runs.providers.anthropic import AnthropicProvider
from sidecar.runs.providers.base import (
    Completed,
    Provider,
    ProviderError,
    ProviderEvent,
    ReasoningDelta,
    ReasoningItem,
    SecretError,
    TextDelta,
    ToolCall,
    Usage,
    resolve_secret,
)
from sidecar.runs.providers.gemini import GeminiProvider
from sidecar.runs.providers.openai import OpenAIProvider
from sidecar.runs.providers.openai_responses import OpenAIResponsesProvider

__all__ = [
    "TextDelta",
    "ReasoningDelta",
    "ReasoningItem",
    "ToolCall",
    "Usage",
    "Completed",
    "ProviderEvent",
    "ProviderError",
    "SecretError",
    "Provider",
    "resolve_secret",
    "OpenAIProvider",
    "OpenAIResponsesProvider",
    "AnthropicProvider",
    "GeminiProvider",
]
