"""The value types every layer shares, at the bottom of the package: metrics, budgets, figures, entries, results.

Frozen dataclasses and enums, typed to the leaves; JSON only in each type's
to_json / from_json, where bytes leave a process.
"""
