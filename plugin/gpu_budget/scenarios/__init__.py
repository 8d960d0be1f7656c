"""Scenario runners: module-level prepare(ctx)/run(ctx) pairs that measured children import by name."""
