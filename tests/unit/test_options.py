"""options.py: each option read from the command line, the ini file or its default, and each bad value's error."""

from pathlib import Path

import pytest

from gpu_budget.isolate.forkserver import DEFAULT_PRELOAD
from gpu_budget.search.explore import DEFAULT_EXAMPLES
from gpu_budget.session import options
from gpu_budget.session.options import BY_NAME, OPTIONS, Options


def read(pytester, *args, ini: str = ""):
    """Options as a session reads them, from `args` and an ini file holding `ini` (parsed in process: no run)."""
    pytester.makeini("[pytest]\n" + ini)
    return Options.from_config(pytester.parseconfig(*args))


def usage_error(pytester, *args, ini: str = "") -> str:
    with pytest.raises(pytest.UsageError) as caught:
        read(pytester, *args, ini=ini)
    return str(caught.value)


def test_the_defaults(pytester):
    opts = read(pytester)
    assert (opts.enabled, opts.update, opts.require_gpu, opts.remediate, opts.explore) == (False,) * 5
    assert opts.baselines == (pytester.path / "baselines").resolve() and opts.scale == "tiny"
    assert opts.json is None and opts.plots is None and opts.timeout == 900.0 and opts.threads == 1
    assert opts.preload == DEFAULT_PRELOAD and opts.malloc == "steady" and opts.dispatch == "avx2"
    assert opts.remediate_max_runs == 8 and opts.snapshot == "rerun" and opts.explore_examples == DEFAULT_EXAMPLES
    assert opts.probes is False  # the gate runs the cases that get a verdict


def test_each_option_from_the_command_line(pytester):
    (pytester.path / "b").mkdir()
    opts = read(pytester, "--gpu-budget", "--gpu-budget-update", "--gpu-budget-baselines=b", "--gpu-budget-scale=real",
                "--gpu-budget-json=out/r.json", "--gpu-budget-timeout=2.5", "--gpu-budget-threads=3",
                "--gpu-budget-require-gpu", "--gpu-budget-malloc=system", "--gpu-budget-cpu-dispatch=native",
                "--gpu-budget-snapshot=never", "--gpu-budget-remediate", "--gpu-budget-remediate-max-runs=2",
                "--gpu-budget-explore", "--gpu-budget-explore-examples=5", "--gpu-budget-probes")
    assert (opts.enabled, opts.update, opts.require_gpu, opts.remediate, opts.explore, opts.probes) == (True,) * 6
    assert opts.baselines == (pytester.path / "b").resolve() and opts.scale == "real"
    assert opts.json == Path("out/r.json").resolve()  # the command line's paths: from the working folder
    assert (opts.timeout, opts.threads, opts.malloc, opts.dispatch) == (2.5, 3, "system", "native")
    assert (opts.snapshot, opts.remediate_max_runs, opts.explore_examples) == ("never", 2, 5)


EVERY_OPTION_INI = (
    "gpu_budget = true", "gpu_budget_update = yes", "gpu_budget_baselines = b", "gpu_budget_scale = real",
    "gpu_budget_json = out/r.json", "gpu_budget_timeout = 60", "gpu_budget_threads = 2",
    "gpu_budget_require_gpu = on", "gpu_budget_malloc = system", "gpu_budget_cpu_dispatch = native",
    "gpu_budget_snapshot = never", "gpu_budget_remediate = 1", "gpu_budget_remediate_max_runs = 3",
    "gpu_budget_explore = True", "gpu_budget_explore_examples = 7", "gpu_budget_probes = on",
    "gpu_budget_preload = json csv", "",
)


def test_each_option_from_the_ini_file(pytester, monkeypatch):
    (pytester.path / "b").mkdir()
    (pytester.path / "sub").mkdir()
    monkeypatch.chdir(pytester.path / "sub")  # an ini path is the rootdir's, wherever pytest starts
    opts = read(pytester, str(pytester.path), ini="\n".join(EVERY_OPTION_INI))
    assert (opts.enabled, opts.update, opts.require_gpu, opts.remediate, opts.explore, opts.probes) == (True,) * 6
    assert opts.baselines == (pytester.path / "b").resolve() and opts.scale == "real"
    assert opts.json == (pytester.path / "out/r.json").resolve()
    assert (opts.timeout, opts.threads, opts.malloc, opts.dispatch) == (60.0, 2, "system", "native")
    assert (opts.snapshot, opts.remediate_max_runs, opts.explore_examples) == ("never", 3, 7)
    assert opts.preload == ("json", "csv")


NATIVE_TOML = pytest.mark.skipif(pytest.version_tuple < (9, 2), reason="typed ini values need pytest 9.2")
EVERY_OPTION_TOML = (  # pytest 9's [tool.pytest]: TOML's own types, as a user writes them
    "gpu_budget = true", "gpu_budget_update = false", "gpu_budget_baselines = 'b'", "gpu_budget_scale = 'real'",
    "gpu_budget_timeout = 60", "gpu_budget_threads = 2", "gpu_budget_require_gpu = true", "gpu_budget_remediate = true",
    "gpu_budget_remediate_max_runs = 3", "gpu_budget_explore_examples = 7", "gpu_budget_record_runs = 2",
    "gpu_budget_probes = true", "gpu_budget_preload = ['json', 'csv']", "",
)


@NATIVE_TOML
def test_each_option_from_a_native_toml_table_with_typed_values(pytester):
    pytester.makepyprojecttoml("[tool.pytest]\n" + "\n".join(EVERY_OPTION_TOML))
    opts = Options.from_config(pytester.parseconfig())
    assert (opts.enabled, opts.update, opts.require_gpu, opts.remediate, opts.probes) == (True, False, True, True, True)
    assert opts.baselines == (pytester.path / "b").resolve() and opts.scale == "real"
    assert (opts.timeout, opts.threads, opts.remediate_max_runs, opts.explore_examples) == (60.0, 2, 3, 7)
    assert opts.record_runs == 2 and opts.preload == ("json", "csv")
    pytester.makepyprojecttoml("[tool.pytest]\ngpu_budget_timeout = 2.5\ngpu_budget_remediate = 'yes'\n")
    opts = Options.from_config(pytester.parseconfig())  # a float where one is meant, and a switch still as text
    assert (opts.timeout, opts.remediate) == (2.5, True)


@NATIVE_TOML
def test_a_bad_typed_toml_value_is_a_usage_error_naming_it(pytester):
    pytester.makepyprojecttoml("[tool.pytest]\ngpu_budget_threads = 0\n")
    with pytest.raises(pytest.UsageError) as caught:
        Options.from_config(pytester.parseconfig())
    assert str(caught.value) == f"{pytester.path / 'pyproject.toml'}: gpu_budget_threads=0: expected a whole number >= 1"

def test_the_command_line_wins_over_the_ini_file(pytester):
    ini = "gpu_budget_scale = real\ngpu_budget_timeout = 60\ngpu_budget_malloc = system\ngpu_budget_threads = 4\n"
    opts = read(pytester, "--gpu-budget", "--gpu-budget-scale=tiny", "--gpu-budget-timeout=5", ini=ini)
    assert (opts.scale, opts.timeout) == ("tiny", 5.0)
    assert (opts.malloc, opts.threads) == ("system", 4)  # not on the command line: the ini file's


def test_a_switch_off_in_the_ini_file_is_turned_on_by_its_flag(pytester):
    assert read(pytester, ini="gpu_budget = false\n").enabled is False
    assert read(pytester, "--gpu-budget", ini="gpu_budget = false\n").enabled is True


def test_an_empty_preload_preloads_nothing(pytester):
    assert read(pytester, ini="gpu_budget_preload =\n").preload == ()


@pytest.mark.parametrize(("ini", "bad"), [("torch, transformers", "torch,"), ("json 1csv", "1csv"), ("torch.", "torch.")])
def test_a_preload_word_that_is_no_module_name_is_a_usage_error_naming_it(pytester, ini, bad):
    """`gpu_budget_preload = torch, transformers` (a comma-separated list) was taken, and the forkserver failed to
    import "torch," only once the session had run: said at its end, every child's floor made without torch."""
    assert usage_error(pytester, ini=f"gpu_budget_preload = {ini}\n") == (
        f"{pytester.path / 'tox.ini'}: gpu_budget_preload={ini.split()!r}: {bad!r} is not a module's name: expected "
        "module names separated by spaces, e.g. torch transformers")
    assert read(pytester, ini="gpu_budget_preload = json os.path _csv\n").preload == ("json", "os.path", "_csv")


SWITCH = "expected true or false (also yes, on, 1, no, off, 0)"
LONGEST_WAIT = ("expected at most 2147183 seconds, the longest wait on a case in another environment "
                "(epoll takes a C int of milliseconds; its helper's start of 300 s on top)")


def _kernel_threads() -> tuple[int, str]:
    """The kernel's bound on a process's threads (each takes a pid), read here as the gate should read it."""
    bounds = [(int(Path(f"/proc/sys/kernel/{name}").read_text()), name) for name in ("pid_max", "threads-max")]
    return min(bounds)


KERNEL_THREADS, KERNEL_FILE = _kernel_threads()
MOST_THREADS = f"expected at most {KERNEL_THREADS}, the most threads this host's kernel starts (/proc/sys/kernel/{KERNEL_FILE})"
BAD = [  # (option, bad value, what the error says is expected)
    ("gpu_budget", "maybe", SWITCH),
    ("gpu_budget_update", "2", SWITCH),
    ("gpu_budget_require_gpu", "yess", SWITCH),
    ("gpu_budget_remediate", "sure", SWITCH),
    ("gpu_budget_explore", "nope", SWITCH),
    ("gpu_budget_probes", "all", SWITCH),
    ("gpu_budget_scale", "huge", "expected one of tiny, real"),
    ("gpu_budget_timeout", "soon", "expected a number of seconds > 0"),
    ("gpu_budget_timeout", "0", "expected a number of seconds > 0"),
    ("gpu_budget_timeout", "-5", "expected a number of seconds > 0"),
    # a wait on another environment's helper is an epoll wait, in a C int of milliseconds: "timeout is too large"
    ("gpu_budget_timeout", "1e10", LONGEST_WAIT),
    ("gpu_budget_timeout", "1e9", LONGEST_WAIT),
    ("gpu_budget_timeout", "2147184", LONGEST_WAIT),
    ("gpu_budget_threads", "0", "expected a whole number >= 1"),
    ("gpu_budget_threads", "1.5", "expected a whole number >= 1"),
    ("gpu_budget_malloc", "jemalloc", "expected one of steady, system"),
    ("gpu_budget_cpu_dispatch", "avx9", "expected one of avx2, native"),
    ("gpu_budget_snapshot", "always", "expected one of rerun, never"),
    ("gpu_budget_record_runs", "0", "expected a whole number >= 1"),
    ("gpu_budget_record_runs", "four", "expected a whole number >= 1"),
    ("gpu_budget_remediate_max_runs", "many", "expected a whole number >= 1"),
    ("gpu_budget_remediate_max_runs", "0", "expected a whole number >= 1"),
    ("gpu_budget_explore_examples", "-1", "expected a whole number >= 1"),
    ("gpu_budget_gpus_per_worker", "0", "expected a whole number >= 1"),
    ("gpu_budget_against", "-x", "expected a git revision (a commit, branch or tag)"),
    ("gpu_budget_sweep", "transformers", ("sweep part 'transformers': expected PACKAGE==V1,V2[;PACKAGE==V1,...], e.g. "
                                          "transformers==5.17.0,5.23.0;peft==0.18.1")),
    ("gpu_budget_sweep", "peft==0.18.1;transformers==5.x", "sweep part 'transformers==5.x': '5.x' is not a version"),
    *(("gpu_budget_sweep", spec, (f"sweep {spec!r}: part {part} is empty (a ';' with no PACKAGE==V1,... on one side): "
                                  "remove the ';', or name what it lost; expected PACKAGE==V1,V2[;PACKAGE==V1,...], "
                                  "e.g. transformers==5.17.0,5.23.0;peft==0.18.1"))
      for spec, part in ((";", 1), ("peft==0.18.1;", 2))),  # a part lost, unsaid
    # int() and float() read any script's digits: a full-width 8 ran 8 threads
    ("gpu_budget_threads", "８", "expected a whole number >= 1, in ASCII digits ('８' is U+FF18)"),
    ("gpu_budget_record_runs", "３", "expected a whole number >= 1, in ASCII digits ('３' is U+FF13)"),
    ("gpu_budget_timeout", "１.5", "expected a number of seconds > 0, in ASCII digits ('１' is U+FF11)"),
    # torch.set_num_threads takes a C int: each measured child died of "Overflow when unpacking long"; below it, a
    # count the kernel cannot start: "libgomp: Thread creation failed", the child aborted
    ("gpu_budget_threads", "99999999999999999999", MOST_THREADS),
    ("gpu_budget_threads", str(KERNEL_THREADS + 1), MOST_THREADS),
]


@pytest.mark.parametrize(("name", "value", "expected"), [bad for bad in BAD if not BY_NAME[bad[0]].is_switch])
def test_a_bad_command_line_value_is_a_usage_error_naming_it(pytester, name, value, expected):
    flag = BY_NAME[name].flag_name
    assert usage_error(pytester, f"{flag}={value}") == f"{flag}={value!r}: {expected}"


@pytest.mark.parametrize(("name", "value", "expected"), BAD)
def test_a_bad_ini_value_is_a_usage_error_naming_it_and_the_file(pytester, name, value, expected):
    message = usage_error(pytester, ini=f"{name} = {value}\n")
    assert message == f"{pytester.path / 'tox.ini'}: {name}={value!r}: {expected}"


def test_every_option_has_a_bad_value_tested():
    """A new option with a parser of its own gets a line in BAD (the path options take any text)."""
    checked = {name for name, _, _ in BAD} | {"gpu_budget_baselines", "gpu_budget_json", "gpu_budget_plots",
                                             "gpu_budget_preload", "gpu_budget_envs"}
    assert checked == set(BY_NAME)


def test_a_baselines_path_that_is_a_file_names_where_it_came_from(pytester):
    (pytester.path / "not-a-folder").write_text("x")
    assert usage_error(pytester, "--gpu-budget", "--gpu-budget-baselines=not-a-folder").startswith(
        "--gpu-budget-baselines='not-a-folder': ")
    assert usage_error(pytester, ini="gpu_budget_baselines = not-a-folder\n").startswith(
        f"{pytester.path / 'tox.ini'}: gpu_budget_baselines='not-a-folder': ")
    (pytester.path / "baselines").write_text("x")
    assert "the default baselines folder 'baselines'" in usage_error(pytester)
    # a folder under a file: each case was measured, then failed, its figures not recorded
    assert usage_error(pytester, "--gpu-budget", "--gpu-budget-baselines=not-a-folder/b") == (
        f"--gpu-budget-baselines='not-a-folder/b': {pytester.path / 'not-a-folder' / 'b'} lies under "
        f"{pytester.path / 'not-a-folder'}, a file (baselines live in <folder>/<hardware key>/<test module>.json)")


def test_a_report_or_folder_path_that_cannot_be_written_is_a_usage_error_before_anything_runs(pytester):
    """A JSON report path that is a folder, a plots or environments folder that is a file, or any of them under a file,
    would fail only once every case had run."""
    (pytester.path / "out").mkdir()
    (pytester.path / "f").write_text("x")
    assert usage_error(pytester, "--gpu-budget", "--gpu-budget-json=out") == (
        f"--gpu-budget-json='out': {pytester.path / 'out'} is a folder, not a file")
    assert usage_error(pytester, ini="gpu_budget_json = f/r.json\n") == (
        f"{pytester.path / 'tox.ini'}: gpu_budget_json='f/r.json': {pytester.path / 'f' / 'r.json'} lies under "
        f"{pytester.path / 'f'}, a file")
    assert usage_error(pytester, "--gpu-budget", "--gpu-budget-envs=f") == (
        f"--gpu-budget-envs='f': {pytester.path / 'f'} is a file, not a folder")
    assert read(pytester, "--gpu-budget", "--gpu-budget-json=out/r.json", "--gpu-budget-envs=out/new").json == pytester.path / "out" / "r.json"


def test_a_json_report_path_naming_a_python_module_is_a_usage_error_not_the_module_overwritten(pytester):
    """`pytest --gpu-budget --gpu-budget-json test_train.py`, the report's own path left out: the test module was read
    as the report's path, the session ran the rootdir's tests, and wrote its report over the module."""
    module = pytester.makepyfile(test_train="def test_x():\n    pass\n")
    assert usage_error(pytester, "--gpu-budget", "--gpu-budget-json", "test_train.py") == (
        f"--gpu-budget-json='test_train.py': {module} is an existing Python source, which no report replaces: name "
        "another file")
    assert usage_error(pytester, ini="gpu_budget_json = test_train.py\n").endswith(
        f"gpu_budget_json='test_train.py': {module} is an existing Python source, which no report replaces: name "
        "another file")
    assert read(pytester, "--gpu-budget", "--gpu-budget-json=test_new.py").json == pytester.path / "test_new.py"  # none to replace


def test_a_json_report_path_naming_a_baseline_file_is_a_usage_error_not_the_baselines_overwritten(pytester):
    """A path left over from another command (`--gpu-budget-json baselines/cpu-x86_64/test_train.json`) wrote the
    session's report over the baselines its next run is judged by."""
    stored = pytester.path / "baselines" / "cpu-x86_64" / "test_train.json"
    stored.parent.mkdir(parents=True)
    stored.write_text('{"entries": {}, "schema": "gpu-budget-baselines/1"}\n')
    assert usage_error(pytester, "--gpu-budget", f"--gpu-budget-json={stored}") == (
        f"--gpu-budget-json={str(stored)!r}: {stored} is a baseline file (schema 'gpu-budget-baselines/1'), which no "
        "report replaces: name another file")
    (pytester.path / "report.json").write_text('{"rows": []}\n')  # a report of an earlier run is replaced as ever
    assert read(pytester, "--gpu-budget", "--gpu-budget-json=report.json").json == pytester.path / "report.json"


@pytest.mark.usefixtures("matplotlib")  # imported before pytester notes sys.modules: tests/imported_once.py
def test_a_plots_folder_that_is_a_file_is_a_usage_error(pytester):
    (pytester.path / "f").write_text("x")
    assert usage_error(pytester, "--gpu-budget", "--gpu-budget-plots=f") == f"--gpu-budget-plots='f': {pytester.path / 'f'} is a file, not a folder"


def test_the_gpu_gate_asked_for_without_the_gate_is_a_usage_error(pytester):
    """`pytest memtests --gpu-budget-require-gpu`, the --gpu-budget lost: every memory-budget test was skipped, nothing
    measured, and the GPU job passed green."""
    assert usage_error(pytester, "--gpu-budget-require-gpu") == (
        "--gpu-budget-require-gpu without --gpu-budget: every memory-budget test would be skipped and the run pass "
        "having measured nothing; add --gpu-budget")
    for flag in ("--gpu-budget-update", "--gpu-budget-remediate", "--gpu-budget-explore", "--gpu-budget-probes"):
        assert usage_error(pytester, flag).startswith(f"{flag} without --gpu-budget: "), flag  # an update recorded none
    assert read(pytester, "--gpu-budget-require-gpu", ini="gpu_budget = true\n").require_gpu
    assert read(pytester, "--gpu-budget", "--gpu-budget-require-gpu").require_gpu
    assert read(pytester, ini="gpu_budget_require_gpu = true\n").require_gpu  # the project's setting, for gated runs


def test_a_measuring_mode_asked_for_without_the_gate_is_a_usage_error(pytester):
    """`pytest memtests --gpu-budget-sweep "transformers==5.17.0,5.23.0"`, the --gpu-budget lost: the sweep measured
    nothing and the run passed, every memory-budget test skipped (--gpu-budget-against is refused so too)."""
    for given in ("--gpu-budget-sweep=transformers==5.17.0,5.23.0", "--gpu-budget-record-runs=4"):
        flag = given.split("=", 1)[0]
        assert usage_error(pytester, given) == (f"{flag} without --gpu-budget: every memory-budget test would be skipped "
                                                "and the run pass having measured nothing; add --gpu-budget")
    opts = read(pytester, "--gpu-budget", "--gpu-budget-sweep=peft==0.18.1", "--gpu-budget-record-runs=4")
    assert (opts.sweep[0].package, opts.record_runs) == ("peft", 4)
    opts = read(pytester, ini="gpu_budget_sweep = peft==0.18.1\ngpu_budget_record_runs = 4\n")  # the project's
    assert (opts.sweep[0].package, opts.record_runs) == ("peft", 4)


def test_a_sweep_given_twice_sweeps_both_not_the_last_alone(pytester):
    """`--gpu-budget-sweep=transformers==5.17.0,5.23.0 --gpu-budget-sweep=peft==0.18.1`: the second replaced the
    first unsaid, and the run reported no transformers sweep it was asked for. Each one given adds its packages, as
    ';' does; a package given in both is refused, as in one spec."""
    opts = read(pytester, "--gpu-budget", "--gpu-budget-sweep=transformers==5.17.0,5.23.0", "--gpu-budget-sweep",
                "peft==0.18.1")
    assert [axis.package for axis in opts.sweep] == ["transformers", "peft"]
    assert usage_error(pytester, "--gpu-budget", "--gpu-budget-sweep=peft==0.18.1", "--gpu-budget-sweep=peft==0.17.0") == (
        "--gpu-budget-sweep='peft==0.18.1;peft==0.17.0': sweep part 'peft==0.17.0': peft is swept twice; list its "
        "versions once")
    assert [axis.package for axis in read(pytester, "--gpu-budget", "--gpu-budget-sweep=peft==0.18.1").sweep] == ["peft"]


def test_a_remediation_bound_given_without_the_remediation_is_a_usage_error(pytester):
    """`pytest --gpu-budget --gpu-budget-remediate-max-runs=20`, the --gpu-budget-remediate lost: no case was searched
    and nothing said the bound went unused."""
    assert usage_error(pytester, "--gpu-budget", "--gpu-budget-remediate-max-runs=20") == (
        "--gpu-budget-remediate-max-runs without --gpu-budget-remediate: no search runs, so it would be ignored; add "
        "--gpu-budget-remediate")
    assert read(pytester, "--gpu-budget", "--gpu-budget-remediate", "--gpu-budget-remediate-max-runs=20").remediate_max_runs == 20
    assert read(pytester, ini="gpu_budget_remediate_max_runs = 20\n").remediate_max_runs == 20  # the project's


def test_an_exploration_bound_given_without_the_explorations_is_a_usage_error(pytester):
    """`pytest --gpu-budget --gpu-budget-explore-examples=50`, the --gpu-budget-explore lost: no exploration ran, the
    run passed, and nothing said the bound went unused (its remediation's twin was refused so)."""
    assert usage_error(pytester, "--gpu-budget", "--gpu-budget-explore-examples=50") == (
        "--gpu-budget-explore-examples without --gpu-budget-explore: no exploration runs, so it would be ignored; add "
        "--gpu-budget-explore")
    assert usage_error(pytester, "--gpu-budget", "-o", "gpu_budget_explore_examples=50").startswith(
        "-o gpu_budget_explore_examples without --gpu-budget-explore: ")
    assert read(pytester, "--gpu-budget", "--gpu-budget-explore", "--gpu-budget-explore-examples=50").explore_examples == 50
    assert read(pytester, ini="gpu_budget_explore_examples = 50\n").explore_examples == 50  # the project's


def test_a_gated_option_given_with_o_without_the_gate_is_a_usage_error(pytester):
    """`pytest -o gpu_budget_update=true`, the --gpu-budget lost: pytest's -o is given on the command line, for this run,
    as the flag is, yet every memory-budget test was skipped, nothing recorded, and the run passed; the ini file's own
    setting stands (the project's, for its gated runs), and -o with the gate on is read."""
    assert usage_error(pytester, "-o", "gpu_budget_update=true") == (
        "-o gpu_budget_update without --gpu-budget: every memory-budget test would be skipped and the run pass having "
        "measured nothing; add --gpu-budget")
    assert usage_error(pytester, "-o", "gpu_budget_record_runs=4").startswith("-o gpu_budget_record_runs without ")
    assert usage_error(pytester, "--gpu-budget", "-o", "gpu_budget_remediate_max_runs=20") == (
        "-o gpu_budget_remediate_max_runs without --gpu-budget-remediate: no search runs, so it would be ignored; add "
        "--gpu-budget-remediate")
    assert read(pytester, "-o", "gpu_budget=true", "-o", "gpu_budget_update=true").update
    assert read(pytester, "--gpu-budget", "-o", "gpu_budget_update=true").update
    assert not read(pytester, "-o", "gpu_budget_update=false").update  # a switch turned off asks for nothing
    assert read(pytester, ini="gpu_budget_update = true\n").update  # the project's setting, for gated runs


def test_a_bad_value_given_with_o_is_named_as_given_there_not_in_the_ini_file(pytester):
    """`-o gpu_budget_timeout=0` was blamed on the ini file, which does not hold it ("None: ..." without one)."""
    assert usage_error(pytester, "-o", "gpu_budget_timeout=0") == "-o gpu_budget_timeout='0': expected a number of seconds > 0"
    assert usage_error(pytester, "-o", "gpu_budget_scale=huge", ini="gpu_budget_scale = real\n") == (
        "-o gpu_budget_scale='huge': expected one of tiny, real")


def test_a_path_under_the_home_folder_is_read_as_such(pytester, monkeypatch, tmp_path):
    """`--gpu-budget-json=~/r.json` (bash expands no ~ after an option's =; an ini file never does) wrote
    ./~/r.json, a folder named ~ in the project, as pytest's own --junitxml does not."""
    monkeypatch.setenv("HOME", str(tmp_path))
    assert read(pytester, "--gpu-budget", "--gpu-budget-json=~/r.json").json == tmp_path / "r.json"
    opts = read(pytester, ini="gpu_budget_envs = ~/envs\ngpu_budget_baselines = ~/b\n")
    assert (opts.envs, opts.baselines) == (tmp_path / "envs", tmp_path / "b")


@pytest.mark.parametrize("option", [o for o in OPTIONS if o.flag and not o.is_switch], ids=lambda o: o.flag_name)
def test_an_empty_command_line_value_is_a_usage_error_naming_it(pytester, option):
    """`--gpu-budget-sweep="$SPEC"` with SPEC unset swept nothing, unsaid; every other option's empty value was refused
    (an ini file's empty value is its default: pytest reads an unset one so)."""
    assert usage_error(pytester, "--gpu-budget", f"{option.flag_name}=").startswith(f"{option.flag_name}='': expected ")


@pytest.mark.parametrize("value", ["", "   "])
def test_an_empty_ini_value_is_the_default(pytester, value):
    assert read(pytester, ini=f"gpu_budget_timeout ={value}\ngpu_budget_scale ={value}\n").timeout == 900.0


def test_the_parsers():
    assert [options.switch(v) for v in ("true", "Yes", "ON", "1", "false", "no", "Off", "0")] == [True] * 4 + [False] * 4
    assert options.one_of("a", "b")(" b ") == "b"
    assert options.whole(" 3 ") == 3 and options.seconds("1e3") == 1000.0
    for parse, value in [(options.seconds, "inf"), (options.seconds, "nan"), (options.whole, "-2"), (options.text, " ")]:
        with pytest.raises(ValueError):
            parse(value)


def test_every_flag_is_the_ini_name_with_dashes_and_every_option_an_ini_value(pytester):
    config = pytester.parseconfig()
    for option in OPTIONS:
        config.getini(option.name)  # registered, or ValueError
        if option.flag:
            assert option.flag_name == "--" + option.name.replace("_", "-")
            assert config.getoption(option.name) is None  # not given: the ini file or the default decides
    assert [o.name for o in OPTIONS if not o.flag] == ["gpu_budget_preload"]


def test_a_bad_ini_value_stops_pytest_naming_it(pytester):
    """End to end: pytest exits with a usage error before running anything, naming the file, the value and why."""
    pytester.makeini("[pytest]\ngpu_budget_threads = two\n")
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{pytester.path / 'tox.ini'}: gpu_budget_threads='two': expected a whole number >= 1*"])


def test_ini_values_take_effect_in_a_run_and_the_command_line_overrides_them(project):
    """End to end: the ini file turns the gate on, names the report and sets a timeout no child meets; the
    command line's timeout wins over it."""
    pytester = project('''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 8})

@pytest.mark.gpu_budget(ram="2 GiB")
def test_fits(gpu_budget):
    gpu_budget.measure(S)
''')
    pytester.makeini("[pytest]\ngpu_budget_preload =\ngpu_budget = true\ngpu_budget_json = out/r.json\n"
                     "gpu_budget_timeout = 0.001\n")
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*[[]gpu-budget error] measured child failed (timeout)*"])
    assert (pytester.path / "out/r.json").exists()
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget-timeout=300").assert_outcomes(passed=1)


def test_a_measuring_setting_given_without_the_gate_is_a_usage_error(pytester):
    """`pytest memtests --gpu-budget-scale=real`, the --gpu-budget lost: every memory-budget test was skipped and the
    run passed, the user believing the real-scale gate ran; so for each setting only a gated run reads (a report or
    plots only a gated run writes, a child's timeout, threads, allocator, GPUs). The ini file's setting stands."""
    for given in ("--gpu-budget-scale=real", "--gpu-budget-timeout=60", "--gpu-budget-threads=2",
                  "--gpu-budget-json=r.json", "--gpu-budget-plots=p", "--gpu-budget-malloc=system", "--gpu-budget-gpus-per-worker=2"):
        flag = given.split("=", 1)[0]
        assert usage_error(pytester, given) == (f"{flag} without --gpu-budget: every memory-budget test would be skipped "
                                                "and the run pass having measured nothing; add --gpu-budget"), given
    assert usage_error(pytester, "-o", "gpu_budget_scale=real").startswith("-o gpu_budget_scale without --gpu-budget: ")
    assert read(pytester, "--gpu-budget", "--gpu-budget-scale=real", "--gpu-budget-timeout=60").scale == "real"
    assert read(pytester, ini="gpu_budget_scale = real\ngpu_budget_timeout = 60\n").scale == "real"  # the project's


def test_a_folder_or_mode_only_a_gated_run_reads_given_without_the_gate_is_a_usage_error(pytester):
    """`pytest --gpu-budget-baselines=ci/baselines`, the --gpu-budget lost: the run was green having compared nothing
    with the baselines the user pointed at; so for the environments folder, the snapshot mode and the children's CPU
    kernels, which only measured children read. The ini file's setting stands."""
    pytester.mkdir("b")
    for given in ("--gpu-budget-baselines=b", "--gpu-budget-envs=e", "--gpu-budget-snapshot=never",
                  "--gpu-budget-cpu-dispatch=native"):
        flag = given.split("=", 1)[0]
        assert usage_error(pytester, given) == (f"{flag} without --gpu-budget: every memory-budget test would be skipped "
                                                "and the run pass having measured nothing; add --gpu-budget"), given
    assert read(pytester, "--gpu-budget", "--gpu-budget-snapshot=never").snapshot == "never"
    assert read(pytester, ini="gpu_budget_snapshot = never\n").snapshot == "never"  # the project's
