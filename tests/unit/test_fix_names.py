"""A fix named wrong in a Scenario's supports=: the error names the scenario and the field, as with_fixes' does."""

import re

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


@pytest.mark.parametrize("name", ["trunacte", "Truncate", "", " truncate"])
def test_without_fixes_of_a_name_no_fix_has_is_refused_naming_it(name):
    """Before: S.with_fixes("truncate").without_fixes("trunacte") returned the scenario with truncate still applied and
    said nothing, so a case meant to run without it ran with it."""
    applied = Scenario(name="my_lm", run="m:f", supports=("truncate", "lora")).with_fixes("truncate")
    with pytest.raises(FixError, match=rf"^scenario 'my_lm': unknown fix {re.escape(repr(name))} \(registered: .*truncate"):
        applied.without_fixes(name)
    assert applied.without_fixes("lora").fixes == ("truncate",)  # a fix it does not apply: nothing to drop, no error
