"""S2's own fixes: how its dynamic batches are made. Registered on import; scenarios.py lists them."""

from gpu_budget import Fix
from gpu_budget.declare import fixes

MAX_DURATION = fixes.register(Fix(
    "max_duration", "data", "split clips longer than params['max_seconds'] into pieces (tokens shared out in "
    "proportion): no long-clip attention peaks", cost="accuracy-risk", proposed_by=("S2",)))
FIXED_BATCH = fixes.register(Fix(
    "fixed_batch", "data", "a fixed number of clips per batch (params['batch_size']) instead of frame-budget "
    "dynamic batches", cost="slower", proposed_by=("S2",)))
