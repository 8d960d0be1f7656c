"""benchmarks/growth_gpu.py's command line, how it shares the runs between sessions, and its allowance rule."""

import pytest

from benchmarks.growth_gpu import TEST_RUNS, allowance_of, mark_of, parse, sessions_of


@pytest.mark.parametrize(("args", "named"), [
    (["--runs", "0"], "got 0"),
    (["--runs", "ten"], "'ten'"),
    (["--leak-mib", "-0.5"], "'-0.5'"),
    (["--leak-mib", "0"], "got '0'"),
    (["--leak-mib", "lots"], "'lots'"),
])
def test_bad_input_is_an_error_naming_the_value(args, named, capsys):
    with pytest.raises(SystemExit) as exc:
        parse(["--device", "cpu", *args])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and args[0] in err and named in err, err


def test_an_unknown_device_is_an_error_naming_it(capsys):
    with pytest.raises(SystemExit):
        parse(["--device", "tpu"])
    assert "invalid choice: 'tpu'" in capsys.readouterr().err


def test_a_run_needs_a_device_and_a_summary_an_existing_file(capsys):
    with pytest.raises(SystemExit):
        parse(["--runs", "2"])
    assert "--device (or --summarize JSON)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse(["--summarize", "/no/such/growth-gpu.json"])
    assert "'/no/such/growth-gpu.json'" in capsys.readouterr().err


def test_the_defaults_are_ten_runs_of_the_ladders_smallest_leak():
    args = parse(["--device", "cuda"])
    assert (args.runs, args.leak_mib, args.out) == (10, 0.25, None)


def test_each_session_alternates_clean_and_leaking_runs():
    plan = sessions_of(3, 0.25, per_session=4)
    assert plan == [{"clean, run 1": 0.0, "0.25 MiB/step kept, run 1": 0.25,
                     "clean, run 2": 0.0, "0.25 MiB/step kept, run 2": 0.25},
                    {"clean, run 3": 0.0, "0.25 MiB/step kept, run 3": 0.25}]
    assert [len(s) for s in sessions_of(10, 0.25)] == [10, 10]  # the GPU part: two sessions of ten


def test_the_written_test_module_compiles_with_the_cpu_mark():
    text = TEST_RUNS.format(cases=repr(sessions_of(1, 0.25)[0]), mark=mark_of("cpu"), declared=10_000)
    compile(text, "test_runs.py", "exec")
    assert "steps={\"tiny\": 10000}" in text and "'device': 'cpu'" in text


@pytest.mark.parametrize(("readings", "expected"), [
    ([0.0, 0.0], (20_480, "every clean run read exactly 0")),  # the floor, not 0: 0 would read 512 B as growth
    ([0.0, 2_048.0], (20_480, "below the floor")),  # 6x is 12 KiB
    ([0.0, 65_536.0], (393_216, "6x the largest clean growth")),
    ([None], (None, "no clean run long enough")),
])
def test_the_allowance_is_six_times_the_largest_clean_growth_never_below_the_floor(readings, expected):
    clean = [{"growth": {"vram_allocated": g}, "steps": [{"vram_allocated": 1}]} for g in readings]
    value, basis = allowance_of(clean, "vram_allocated")
    assert value == expected[0] and expected[1] in basis
