"""Runs: the model/tool loop, providers, the event journal."""

from __future__ import annotations
