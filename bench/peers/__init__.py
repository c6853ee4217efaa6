"""Peers the benchmarks measure the sidecar against, run in the same session."""
