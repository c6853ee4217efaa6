"""Frozen inputs, context items, macros, presets and profiles."""

from __future__ import annotations
