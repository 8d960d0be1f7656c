"""Search: remediation (cheapest fixes that pass), Hypothesis exploration, boundary search over real runs."""
