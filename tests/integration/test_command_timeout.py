"""What a command case stopped at its timeout keeps: the phase it was in and the main process's figure, as fresh as
the tree's (isolate/forkserver.py, isolate/child.py)."""


from inner_session import SLOW_CASE, rows, stepping_then_asleep

MiB = 2**20

SCRIPT = stepping_then_asleep(4, 100)


def test_a_timed_out_script_keeps_its_open_step_and_its_main_figure(pytester, monkeypatch):
    """One process, 4 steps of 30 MiB, then asleep past --gpu-budget-timeout. The row read `RAM tree 131.11 MiB, RAM
    main 101.11 MiB` and its phases ended at train_step_3."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(train=SCRIPT, test_mem=SLOW_CASE)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-timeout=5",
                                           "--gpu-budget-json=r.json")
    result.assert_outcomes(failed=1)
    row = rows(pytester)["test_slow"]
    assert row["error"]["kind"] == "timeout"
    assert list(row["phases"])[-1] == "train_step_4", list(row["phases"])
    assert [s["step"] for s in row["steps"]] == [1, 2, 3, 4]
    last = row["phases"]["train_step_4"]
    assert last["ram_peak"] >= row["phases"]["train_step_3"]["ram_peak"] + 25 * MiB, last
    assert row["peaks"]["ram"] == row["peaks"]["ram_tree"], row["peaks"]  # one process: the tree is the script
