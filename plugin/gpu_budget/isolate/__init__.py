"""Isolate: the forkserver, the measured child, commands and their hooks, GPU placement, kernel dispatch."""
