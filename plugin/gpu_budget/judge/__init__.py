"""Judge: baselines on disk, the comparison and its verdicts, the fail-safe, the setup fingerprint."""
