"""A fix named wrong in a Scenario's supports=: the error names the scenario and the field, as with_fixes' does."""

import pytest

from gpu_budget import Fix, FixError, Scenario


def test_a_misspelt_supported_fix_names_its_scenario_and_field():
    """Before: "unknown fix 'truncat' (registered: amp, ...)", naming neither the scenario nor supports=."""
    with pytest.raises(FixError, match=r"^scenario 'my_lm': supports=: unknown fix 'truncat' \(registered: .*truncate"):
        Scenario(name="my_lm", run="m:f", supports=("truncat",))


def test_a_users_fix_under_a_library_fixs_name_names_its_scenario_and_asks_for_another_name():
    """Before: "fix 'truncate' is already registered with a different definition (data, accuracy-risk: ...)", with no
    word of where, nor what to do."""
    with pytest.raises(FixError, match=r"^scenario 'my_lm': fix 'truncate' is already registered with a different "
                                       r"definition \(data, accuracy-risk: .*\): give yours another name"):
        Scenario(name="my_lm", run="m:f", supports=(Fix("truncate", "data", "my own truncation"),))
