"""A fix that replaces an applied one: its run must not keep what the replaced fix set."""

from failing_case import search

from gpu_budget import Fix, Scenario
from gpu_budget.declare import fixes
from gpu_budget.model.figures import Peaks
from gpu_budget.model.result import Trial

FULL = fixes.register(Fix("trr_full_embed", "model", "train the embedding in full", remedy=False,
                          params={"train_embed": "full"}))
ROWS = fixes.register(Fix("trr_new_rows", "model", "train only the new rows", replaces=("trr_full_embed",),
                          params={"rows": "new"}))
BOTH = fixes.register(Fix("trr_frozen_rows", "model", "train no embedding row", replaces=("trr_full_embed",),
                          params={"train_embed": "none", "rows": "none"}))
NAMED = fixes.register(Fix("trr_named", "model", "train the embedding in full, read by name", remedy=False))
BY_NAME = fixes.register(Fix("trr_by_name", "model", "train only the new rows, read by name", replaces=("trr_named",)))


def measured(scenario):
    runs = []

    def measure(candidate):
        runs.append((candidate.fixes, dict(candidate.params)))
        return Trial((), "pass", Peaks(ram=10))

    return search(scenario, measure), runs


def test_a_fix_that_leaves_the_replaced_fixs_params_set_is_not_run_and_says_why():
    """Before, "+trr_new_rows -trr_full_embed" was the answer from a run whose params still held train_embed='full'
    (what trr_full_embed set; without_fixes keeps params): measured: ('trr_new_rows',) {'train_embed': 'full', 'rows':
    'new'}: the replaced fix's effect measured as gone."""
    lm = Scenario(name="lm", run="m:f", params={"train_embed": "none", "rows": "all"},
                  supports=(FULL, ROWS)).with_fixes(FULL.name)
    found, runs = measured(lm)
    assert runs == [] and found.status == "no-candidates"
    assert found.skipped == {ROWS.name: "replaces trr_full_embed, applied, whose train_embed would stay as it set "
                                        "it (its run would measure trr_full_embed's setting still): set train_embed "
                                        "in trr_new_rows's params too"}


def test_a_fix_that_sets_the_replaced_fixs_params_itself_or_replaces_one_by_name_is_run():
    lm = Scenario(name="lm", run="m:f", params={"train_embed": "none", "rows": "all"},
                  supports=(FULL, BOTH, NAMED, BY_NAME)).with_fixes(FULL.name, NAMED.name)
    found, runs = measured(lm)
    assert found.status == "found" and runs[0] == ((NAMED.name, BOTH.name), {"train_embed": "none", "rows": "none"})
    found, runs = measured(Scenario(name="lm", run="m:f", supports=(NAMED, BY_NAME)).with_fixes(NAMED.name))
    assert found.found == (BY_NAME.name,) and runs == [((BY_NAME.name,), {})]
