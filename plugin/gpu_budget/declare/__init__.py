"""Declare: what a memory-budget test states (Scenario, Budget, Tolerance), the fix library, the marker."""
