"""Command scenarios: a user's script run unchanged under the gate (plugin/gpu_budget/isolate/command.py).

Each test runs a real pytest session (pytester, in a subprocess) whose cases
start real Python scripts; the orphan checks look for the scripts' processes
by a marker in their command line after the session has ended.
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from inner_session import rows, survivors

MiB = 2**20

SCRIPT = '''
import os, sys, time
from gpu_budget import phase, step

mib = int(sys.argv[1])
phase("load")
held = b"\\x01" * (mib * 2**20)
kept = []  # a leak: LEAK_MIB more held after each step
for k in range(4):
    step()
    kept.append(b"\\x01" * (int(os.environ.get("LEAK_MIB", "0")) * 2**20))
    time.sleep(0.02)
phase("save")
with open(os.environ.get("ENV_OUT", os.devnull), "w") as fh:
    fh.write(repr(dict(os.environ)))
sys.exit(int(os.environ.get("EXIT", "0")))
'''


@pytest.fixture
def command_project(pytester, monkeypatch):
    """A pytester project with script.py (phases, steps, a planted leak by env) and a test module writer."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(script=SCRIPT)

    def write_tests(body: str):
        pytester.makepyfile(test_mem="import sys\nimport pytest\nfrom gpu_budget import Fix, Scenario\n"
                                     + textwrap.dedent(body))
        return pytester

    return write_tests


def test_a_script_gets_its_phases_steps_and_growth(command_project):
    pytester = command_project('''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_script(gpu_budget):
            S = Scenario(name="s", command=[sys.executable, "script.py", "{mib}"], params={"mib": 64},
                         env={"LEAK_MIB": "8"})
            row = gpu_budget.measure(S)
            assert row.info["exit_code"] == 0 and row.info["phase_marks"] == 6
    ''')
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(passed=1)
    row = rows(pytester)["test_script"]
    assert list(row["phases"]) == ["run", "load", "train_step_1", "train_step_2", "train_step_3", "train_step_4", "save"]
    assert [s["step"] for s in row["steps"]] == [1, 2, 3, 4]
    # the script's own process, counted in full: its 64 MiB held, and the 8 MiB more each step allocates
    assert row["phases"]["load"]["ram_peak"] >= 64 * MiB
    assert row["growth"]["ram_per_step"] is None  # 4 steps: too few to judge growth (rises.MIN_STEPS: 9)
    assert row["peaks"]["ram_tree"] == row["peaks"]["ram"]  # one process: the tree is the script
    assert row["ram_tree_method"] == "vmhwm+peak-of-summed-descendants"


def test_a_planted_regression_in_a_script_fails_the_gate(command_project):
    """Recorded clean, then run with 32 MiB more held: the baseline comparison catches it."""
    body = '''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_script(gpu_budget):
            gpu_budget.measure(Scenario(name="s", command=[sys.executable, "script.py", "{mib}"],
                                        params={"mib": MIB}))
    '''
    pytester = command_project(body.replace("MIB", "64"))
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget").assert_outcomes(passed=1)  # recorded
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget").assert_outcomes(passed=1)  # same again
    command_project(body.replace("MIB", "96"))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*regression*ram_tree*> baseline*"])


def test_a_non_zero_exit_fails_the_case_with_its_code_and_stderr(command_project):
    pytester = command_project('''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_exit(gpu_budget):
            code = "import sys; print('loading the dataset failed: no such split', file=sys.stderr); sys.exit(37)"
            gpu_budget.measure(Scenario(name="e", command=[sys.executable, "-c", code]))

        def test_after():
            pass
    ''')
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget")
    result.assert_outcomes(failed=1, passed=1)  # the session went on
    result.stdout.fnmatch_lines(["*measured child failed (exit), host RAM peak seen so far * MiB: command * exited with 37; the last lines of its stderr:",
                                 "*loading the dataset failed: no such split*"])


@pytest.mark.parametrize("case,message", [
    ('command=["no-such-program-xyz"]', "*command 'no-such-program-xyz' not found*"),
    ('command=["./script.py"]', "*command './script.py' is not executable*"),
    ('command=[sys.executable, "script.py", "1"], cwd="no/such/dir"', "*cwd '*no/such/dir' does not exist*"),
])
def test_a_command_that_cannot_start_is_a_clear_failure(command_project, case, message):
    pytester = command_project(f'''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_bad(gpu_budget):
            gpu_budget.measure(Scenario(name="b", {case}))
    ''')
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([message])


def test_a_timeout_kills_the_whole_tree_a_daemon_included_leaving_no_socket_folder(command_project, monkeypatch):
    tmp = Path(tempfile.mkdtemp(prefix="gb-timeout-", dir="/tmp"))  # the session's TMPDIR: short, and its own
    monkeypatch.setenv("TMPDIR", str(tmp))
    marker = f"gpu-budget-orphan-{uuid.uuid4().hex[:8]}"
    pytester = command_project('''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_hang(gpu_budget):
            gpu_budget.measure(Scenario(name="h", command=[sys.executable, "hang.py", "MARKER"]))
    '''.replace("MARKER", marker))
    # a grandchild in a session of its own (as a daemon makes), and a child, both sleeping past the timeout
    pytester.makepyfile(hang=f'''
        import subprocess, sys, time
        sleeper = [sys.executable, "-c", "import time; time.sleep(300)", "{marker}"]
        subprocess.Popen(sleeper, start_new_session=True)
        subprocess.Popen(sleeper)
        time.sleep(300)
    ''')
    t0 = time.monotonic()
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-timeout=4")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*timed out after * s and was killed*"])
    assert time.monotonic() - t0 < 120
    time.sleep(0.5)
    assert survivors(marker) == []
    left = [p.name for p in tmp.glob("gpu-budget-sock-*")]  # the killed child's socket folder: the session removes it
    shutil.rmtree(tmp)
    assert left == []


MP_SCRIPT = '''
import os, multiprocessing as mp
from gpu_budget import phase


def double(x):
    return x * 2


if __name__ == "__main__":
    phase("load")
    pool = mp.get_context(os.environ["CTX"]).Pool(1)
    pool.map(double, range(4))
    pool.close()  # not `with Pool`: its end SIGTERMs the worker, which then reports nothing, and is missed
    pool.join()  # where it lived under one poll (docs/process-tree.md); a worker that exits reports its end
    phase("save")
'''


@pytest.mark.parametrize("ctx", ["spawn", "forkserver"])
def test_multiprocessing_helpers_that_end_after_the_script_are_measured_not_leftovers(command_project, ctx):
    """multiprocessing's resource tracker (and its forkserver) end on their own milliseconds after the script's
    process: within the grace, measured in the phase open at its end, and no leftover."""
    pytester = command_project('''
        @pytest.mark.gpu_budget(ram="1 GiB")
        def test_mp(gpu_budget):
            gpu_budget.measure(Scenario(name="mp", command=[sys.executable, "mpclean.py"], env={"CTX": "CONTEXT"}))
    '''.replace("CONTEXT", ctx))
    pytester.makepyfile(mpclean=MP_SCRIPT)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(passed=1)
    phases = rows(pytester)["test_mp"]["phases"]
    load, save = phases["load"], phases["save"]
    # the pool's worker (and for forkserver the forkserver) beside the script and the tracker, as before: the worker
    # read by a poll or by its exit report, whatever the load
    assert load["tree"]["processes"] >= {"spawn": 3, "forkserver": 4}[ctx]
    assert load["ram_tree_peak"] > load["ram_peak"]
    # the helpers that outlived the script are measured to their end: in the tree, each its own exit reported
    helpers = [p for p in save["tree"]["detail"] if not p["whole"]]
    assert len(helpers) == {"spawn": 1, "forkserver": 2}[ctx], save["tree"]["detail"]
    assert all(p["exited"] and p["reported"] for p in helpers), helpers
    assert save["ram_tree_peak"] > save["ram_peak"]


def test_a_daemon_left_behind_fails_the_case_and_is_killed(command_project):
    """Two daemons (one in a session of its own, one double-forked) outlive the grace and fail the case, named;
    the spawned pool's resource tracker, which ends on its own, is not counted among them."""
    marker = f"gpu-budget-daemon-{uuid.uuid4().hex[:8]}"
    pytester = command_project('''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_daemon(gpu_budget):
            gpu_budget.measure(Scenario(name="d", command=[sys.executable, "daemon.py"]))
    ''')
    pytester.makepyfile(daemon=f'''
        import multiprocessing as mp, os, subprocess, sys

        if __name__ == "__main__":
            with mp.get_context("spawn").Pool(1) as pool:
                pool.map(abs, range(4))
            sleeper = [sys.executable, "-c", "import time; time.sleep(300)", "{marker}"]
            subprocess.Popen(sleeper, start_new_session=True)
            if os.fork() == 0:  # the classic double fork: the grandchild's parent exits at once
                os.setsid()
                if os.fork() == 0:
                    os.execv(sys.executable, sleeper)
                os._exit(0)
            os.wait()
    ''')
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*measured child failed (leftover): command * exited and left 2 process(es) running*"])
    time.sleep(0.5)
    assert survivors(marker) == []


def test_a_process_that_forks_and_exits_over_and_over_fails_the_case_and_is_killed(command_project):
    """A process in a session of its own that forks and exits every millisecond is a zombie whenever a scan reads
    it, its successor born after /proc was listed: a kill pid by pid never found it, so the case passed and it ran
    on. Its process group, which every fork keeps, is killed at once (lifecycle.kill_descendants)."""
    marker = f"gpu-budget-jumper-{uuid.uuid4().hex[:8]}"
    pytester = command_project(f'''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_jumper(gpu_budget):
            gpu_budget.measure(Scenario(name="j", command=[sys.executable, "jumper.py", "{marker}"]))
    ''')
    pytester.makepyfile(jumper='''
        import os, time

        if os.fork() == 0:
            os.setsid()
            with open("jumper.sid", "w") as fh:
                fh.write(str(os.getpid()))
            end = time.monotonic() + 60  # a bound, should the gate miss it: the machine is not left a runaway
            while time.monotonic() < end:
                if os.fork() != 0:
                    os._exit(0)
                time.sleep(0.001)
            os._exit(0)
        time.sleep(0.5)
    ''')
    try:
        result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget")
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(["*measured child failed (leftover): command * exited and left * running*"])
        deadline = time.monotonic() + 2
        while survivors(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert survivors(marker) == []
    finally:
        group = int((pytester.path / "jumper.sid").read_text() or 0)
        if group > 1:
            try:
                os.killpg(group, 9)
            except ProcessLookupError:
                pass


def test_gigabytes_of_output_are_read_and_dropped_keeping_the_tail(command_project):
    """A chatty script (512 MiB to stdout) runs to its end; the measuring child keeps the last lines only."""
    pytester = command_project('''
        CODE = "import sys\\nline = b'x' * 1023 + b'\\\\n'\\nfor _ in range(512 * 1024): sys.stdout.buffer.write(line)\\n" \\
               "sys.exit(3)"

        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_chatty(gpu_budget):
            gpu_budget.measure(Scenario(name="c", command=[sys.executable, "-c", CODE]))
    ''')
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*exited with 3 (its stderr was empty)*"])
    error = rows(pytester)["test_chatty"]["error"]
    assert len(error["message"]) < 2000


def test_pins_reach_the_script_and_its_env_wins_and_is_recorded(command_project):
    pytester = command_project('''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_env(gpu_budget):
            gpu_budget.measure(Scenario(name="v", command=[sys.executable, "script.py", "1"],
                                        env={"ENV_OUT": "env.txt", "OMP_NUM_THREADS": "3"}))
    ''')
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget").assert_outcomes(passed=1)
    env = eval((pytester.path / "env.txt").read_text())  # the script's own repr of a dict of strings
    assert env["MALLOC_MMAP_THRESHOLD_"] == env["MALLOC_TRIM_THRESHOLD_"] == "131072"
    assert env["MKL_NUM_THREADS"] == "1" and env["OMP_NUM_THREADS"] == "3"  # the scenario's env wins
    if os.uname().machine == "x86_64" and "ATEN_CPU_CAPABILITY" not in os.environ:
        assert env["ATEN_CPU_CAPABILITY"] == "avx2"  # the dispatch pin, from the forkserver's environment
    (baseline,) = [p for p in (pytester.path / "baselines").rglob("*.json")]
    entry = json.loads(baseline.read_text())["entries"]["tiny"]["test_mem.py::test_env"]
    assert entry["fingerprint"]["command_env"]["OMP_NUM_THREADS"] == "3"
    assert entry["fingerprint"]["command_env"]["ENV_OUT"] == "env.txt"


def test_a_fix_applies_to_a_command_through_its_arguments(command_project):
    pytester = command_project('''
        FLAG = Fix("quiet_flag", "runtime", "passes --quiet", args=("--quiet",))
        CODE = "import sys; assert sys.argv[1:] == ['--quiet'], sys.argv"

        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_fix(gpu_budget):
            row = gpu_budget.measure(Scenario(name="f", command=[sys.executable, "-c", CODE], supports=(FLAG,),
                                              fixes=("quiet_flag",)))
            assert row.info["command"][-1] == "--quiet"
    ''')
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget").assert_outcomes(passed=1)


def test_a_vram_budget_on_a_command_is_unchecked_on_a_host_without_cuda_and_host_ram_is_gated(command_project):
    """Measured and judged on host RAM where no GPU could check the VRAM budget, the row saying so; a runner that
    must have a GPU makes it an error."""
    pytester = command_project('''
        @pytest.mark.gpu_budget(ram="2 GiB", vram="8 GiB")
        def test_vram(gpu_budget):
            row = gpu_budget.measure(Scenario(name="g", command=[sys.executable, "script.py", "1"]))
            assert row.peaks.ram_tree and row.unchecked
    ''')
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*RAM 2.00 GiB, VRAM 8.00 GiB unchecked*no-baseline*"])
    required = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-require-gpu")
    required.assert_outcomes(failed=1)
    required.stdout.fnmatch_lines(["*--gpu-budget-require-gpu says this runner must have one*"])


def test_phase_and_step_outside_the_gate_do_nothing_and_import_nothing(tmp_path):
    code = ("import sys, time\nt0 = time.perf_counter()\nimport gpu_budget\n"
            "for _ in range(1000): gpu_budget.step()\ngpu_budget.phase('eval')\n"
            "print(gpu_budget.step(), 'torch' in sys.modules, 'transformers' in sys.modules)")
    env = {k: v for k, v in os.environ.items() if k != "GPU_BUDGET_SOCKET"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1001", "False", "False"]


def test_a_step_number_of_numpy_s_is_marked_and_a_step_that_is_no_whole_number_is_refused(command_project, tmp_path):
    """A step counted by numpy (np.arange, an int64 from an array) is a step like any other: under the gate its mark
    once raised "Object of type int64 is not JSON serializable" in the user's script, which ran fine outside it. A
    step given as text or a fraction is refused, outside the gate too, naming it."""
    pytester = command_project('''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_numpy(gpu_budget):
            code = "import numpy, gpu_budget\\nfor k in numpy.arange(1, 3): gpu_budget.phase('train', step=k)"
            gpu_budget.measure(Scenario(name="np", command=[sys.executable, "-c", code]))
    ''')
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(passed=1)
    assert [s["step"] for s in rows(pytester)["test_numpy"]["steps"]] == [1, 2]
    env = {k: v for k, v in os.environ.items() if k != "GPU_BUDGET_SOCKET"}
    for bad in ("'3'", "2.5", "True"):
        out = subprocess.run([sys.executable, "-c", f"import gpu_budget; gpu_budget.phase('train', step={bad})"],
                             check=False, env=env, capture_output=True, text=True)
        assert f"ValueError: step {bad}: expected a whole number" in out.stderr, out.stderr


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="needs transformers")  # no import under
def test_a_trainer_script_gets_step_phases_with_no_edit(command_project):  # pytester: its teardown would drop numpy
    """The gate adds its callback to a plain Trainer script's default callbacks: steps, evaluation, growth."""
    pytester = command_project('''
        @pytest.mark.gpu_budget(ram="4 GiB")
        def test_trainer(gpu_budget):
            gpu_budget.measure(Scenario(name="t", command=[sys.executable, "train.py"]))
    ''')
    pytester.makepyfile(train='''
        import torch
        from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

        class Data(torch.utils.data.Dataset):
            def __len__(self):
                return 16

            def __getitem__(self, i):
                return {"input_ids": torch.full((32,), i % 50), "labels": torch.tensor(i % 2)}

        config = BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                            vocab_size=100)
        args = TrainingArguments(output_dir="out", max_steps=3, per_device_train_batch_size=4, report_to=[],
                                 save_strategy="no", logging_strategy="no", eval_strategy="steps", eval_steps=2,
                                 use_cpu=True)
        Trainer(model=BertForSequenceClassification(config), args=args, train_dataset=Data(),
                eval_dataset=Data()).train()
    ''')
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json").assert_outcomes(passed=1)
    row = rows(pytester)["test_trainer"]
    assert list(row["phases"]) == ["run", "train_setup", "train_step_1", "train_step_2", "eval_step_2", "train_step_3",
                                   "eval_step_3", "train_end"]
    assert [s["step"] for s in row["steps"]] == [1, 2, 3]


def test_every_python_process_of_a_command_reports_its_last_window(command_project):
    """Forked multiprocessing children report as they exit, as the command's own process does: the bound is exact."""
    pytester = command_project('''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_workers(gpu_budget):
            gpu_budget.measure(Scenario(name="w", command=[sys.executable, "workers.py"]))
    ''')
    pytester.makepyfile(workers='''
        import multiprocessing as mp

        def touch():
            block = b"\\x01" * (64 << 20)

        if __name__ == "__main__":
            for _ in range(3):
                p = mp.get_context("fork").Process(target=touch)
                p.start()
                p.join()
    ''')
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json").assert_outcomes(passed=1)
    row = rows(pytester)["test_workers"]
    tree = row["phases"]["run"]["tree"]
    assert tree["exited"] == tree["reported"] == 4, tree  # three workers and the script itself
    assert row["ram_tree_bound"].startswith("exact per process"), row["ram_tree_bound"]
    # one after another: the summed tree never holds all three workers' 64 MiB, where the sum of each process's own
    # peak does (two may share one 10 ms window, the documented error: docs/process-tree.md)
    assert tree["peak_sum"] >= 3 * 64 * MiB, tree
    assert 64 * MiB < tree["private"] <= tree["peak_sum"] - 64 * MiB, tree


def test_the_hook_adds_little_to_each_python_process_it_runs_in(tmp_path):
    """Under the gate every Python process of a command imports the hook: a few modules, not the plugin."""
    import socket

    from gpu_budget.isolate.command import HOOK_DIR

    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "s"))
    code = "import sys; print(len(sys.modules), sorted(m for m in sys.modules if m.startswith('gpu_budget')))"
    plain = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split(" ", 1)
    env = {**os.environ, "GPU_BUDGET_SOCKET": str(tmp_path / "s"),
           "PYTHONPATH": os.pathsep.join([HOOK_DIR, os.environ["PYTHONPATH"]])}  # the hook first, as command.py puts it
    hooked = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    count, names = hooked.split(" ", 1)
    assert eval(names) == ["gpu_budget", "gpu_budget.isolate", "gpu_budget.isolate.autohook", "gpu_budget.measure",
                           "gpu_budget.measure.procfs", "gpu_budget.oom", "gpu_budget.script"]
    assert int(count) - int(plain[0]) < 40, (count, plain[0])


SITECUSTOMIZE = '''
import os
with open(os.path.join(os.path.dirname(__file__), "ran"), "a") as fh:
    fh.write("the project's sitecustomize ran\\n")
'''


HOOKED = '''
import sys
with open("hooked", "w") as fh:  # the gate's hook (its Trainer callback, exit reports, GPU figures) is installed
    fh.write(str("gpu_budget.isolate.autohook" in sys.modules))
'''


def test_a_pythonpath_in_the_scenarios_env_keeps_the_hook_and_the_users_sitecustomize(command_project):
    """A project with its own sitecustomize.py on a PYTHONPATH the Scenario's env sets: both run (the user's
    PYTHONPATH once replaced the hook's folder: a Trainer script then had one phase, "run", no steps, no word)."""
    pytester = command_project('''
        from pathlib import Path

        SITE = str(Path(__file__).parent / "site")

        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_script(gpu_budget):
            gpu_budget.measure(Scenario(name="s", command=[sys.executable, "hooked.py"], env={"PYTHONPATH": SITE}))
    ''')
    pytester.makepyfile(hooked=HOOKED)
    (pytester.path / "site").mkdir()
    (pytester.path / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json").assert_outcomes(
        passed=1)
    assert (pytester.path / "hooked").read_text() == "True"
    assert (pytester.path / "site" / "ran").read_text() == "the project's sitecustomize ran\n"
    assert "hook did not run" not in rows(pytester)["test_script"]["message"]


def test_a_command_imports_the_projects_modules_not_the_folders_pytest_put_on_its_path(pytester, monkeypatch):
    """A helper module beside the tests (memtests/model.py) that shares a name with the project's own (src/model.py,
    on the PYTHONPATH the session was started with): the script imports the project's, as it does outside the gate.
    The folders pytest put on its own sys.path (memtests/) once came first on the command's PYTHONPATH, and the script
    then imported the test's helper: another program than the one gated."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    for path, text in {"memtests/model.py": "WHO = 'the test helper'\n", "src/model.py": "WHO = 'the project'\n",
                       "proj/train.py": "import model\nopen('who', 'w').write(model.WHO)\n",
                       "memtests/test_imports.py": textwrap.dedent('''
                           import sys
                           import pytest
                           from gpu_budget import Scenario

                           @pytest.mark.gpu_budget(ram="2 GiB")
                           def test_script(gpu_budget):
                               gpu_budget.measure(Scenario(name="s", command=[sys.executable, "proj/train.py"]))
                       ''')}.items():
        (pytester.path / path).parent.mkdir(exist_ok=True)
        (pytester.path / path).write_text(text)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"),
                                                                   str(pytester.path / "src")])))
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "memtests").assert_outcomes(passed=1)
    assert (pytester.path / "who").read_text() == "the project"


def test_a_command_whose_own_process_never_ran_the_hook_says_so_in_its_row(command_project):
    """A shell that starts the script as its child: the shell is the command's own process, which no Python hook
    reaches, so the row has no phases or steps from it, and says why instead of passing quietly."""
    pytester = command_project('''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_shell(gpu_budget):
            gpu_budget.measure(Scenario(name="sh", command=["sh", "-c", f"{sys.executable} script.py 8; true"]))
    ''')
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json").assert_outcomes(
        passed=1)
    row = rows(pytester)["test_shell"]
    assert list(row["phases"]) == ["run"] and row["steps"] == []
    assert row["message"].startswith("the gate's hook did not run in the command's own process (pid "), row["message"]
    assert "sh): no phase, step or GPU figure came from it" in row["message"], row["message"]


def test_a_script_that_leaves_by_os_exit_is_not_said_to_have_missed_the_hook(command_project):
    """A script that marks nothing and ends with os._exit (as a distributed script skipping its teardown does) sends
    no exit report, yet the hook ran in it: its own process says so as it starts. Before, its row said "the gate's
    hook did not run in the command's own process (pid N, python3) ... (a process that is not Python, ...)". A Python
    that runs no hook (-I) is still said to. Each lives a second: one that ends before the tree's first read is
    unmeasured on a loaded machine (`-I -c pass` was, in 9 of 16 runs)."""
    pytester = command_project('''
        @pytest.mark.parametrize("how", [["-c", "import os, time; time.sleep(1); os._exit(0)"],
                                         ["-I", "-c", "import time; time.sleep(1)"]], ids=["exit", "isolated"])
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_script(gpu_budget, how):
            gpu_budget.measure(Scenario(name="s", command=[sys.executable, *how]))
    ''')
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json").assert_outcomes(
        passed=2)
    found = rows(pytester)
    assert "notes" not in found["test_script[exit]"]["info"], found["test_script[exit]"]["info"]
    assert "hook did not run" in found["test_script[isolated]"]["message"], found["test_script[isolated]"]["message"]


def test_steps_marked_behind_a_shell_are_named_when_none_are_measured(command_project):
    """steps= on a script the command runs through a shell: the script's marks reach the gate and are ignored (the
    shell is the command's own process), and the error says so, with what to run instead (before: "the run measured
    0 optimizer step(s)" alone, its 4 marks in the row's info)."""
    pytester = command_project('''
        @pytest.mark.gpu_budget(ram="2 GiB", steps=10_000)
        def test_shell(gpu_budget):
            gpu_budget.measure(Scenario(name="sh", command=["sh", "-c", f"{sys.executable} script.py 8; true"]))
    ''')
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json").assert_outcomes(
        failed=1)
    row = rows(pytester)["test_shell"]
    assert row["info"]["ignored_marks"] >= 4, row["info"]
    assert "but the run measured 0 optimizer step(s)" in row["message"], row["message"]
    assert "phase mark(s) arrived from a descendant of the command and were ignored" in row["message"], row["message"]


def test_steps_on_a_script_that_marks_none_ask_for_its_marks(command_project):
    """steps= on a script whose loop marks no step: the error says how to mark them, not to run more steps (before:
    "the run measured 0 optimizer step(s) ...; run more steps at this scale", for a script that ran 12)."""
    pytester = command_project('''
        @pytest.mark.gpu_budget(ram="2 GiB", steps=10_000)
        def test_unmarked(gpu_budget):
            gpu_budget.measure(Scenario(name="u", command=[sys.executable, "unmarked.py"]))
    ''')
    pytester.makepyfile(unmarked="import time\nfor k in range(12):\n    time.sleep(0.01)\n")
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json").assert_outcomes(
        failed=1)
    message = rows(pytester)["test_unmarked"]["message"]
    assert "but the run measured 0 optimizer step(s)" in message, message
    assert "gpu_budget.step()" in message and "run more steps" not in message, message


def test_a_command_s_output_pipes_are_closed_when_it_ends(command_project, monkeypatch):
    """The measuring child reads the command's stdout and stderr through pipes: both are closed once it ended, so
    none is left to the garbage collector (Python's development mode warns of each, `unclosed file`)."""
    monkeypatch.setenv("PYTHONDEVMODE", "1")
    pytester = command_project('''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_script(gpu_budget):
            gpu_budget.measure(Scenario(name="s", command=[sys.executable, "script.py", "8"]))
    ''')
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "-s")  # the child's stderr shown
    result.assert_outcomes(passed=1)
    assert "unclosed file" not in result.stdout.str() + result.stderr.str()
