"""The kernel's count of OOM kills (measure/oom_kills.py) read from fake /proc and cgroup trees, and what a rise or a
SIGKILL seen makes of a command case that exited 0 (isolate/oom_killed.py). The real OOM killer cannot be set off
safely in a test: the files are written here as the kernel lays them out."""

from types import SimpleNamespace

import pytest

from gpu_budget.isolate import child
from gpu_budget.isolate.oom_killed import judge
from gpu_budget.measure.oom_kills import OomKills, read, rose


def _tree(tmp_path, cgroup: str, files: dict[str, str]):
    proc, cgroups = tmp_path / "proc", tmp_path / "cgroup"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "cgroup").write_text(cgroup)
    for rel, text in files.items():
        path = (proc if rel == "vmstat" else cgroups) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(proc), str(cgroups)


def test_cgroup_v2_memory_events_of_the_own_cgroup_come_first(tmp_path):
    proc, cgroups = _tree(tmp_path, "0::/user.slice/ci\n", {
        "user.slice/ci/memory.events": "low 0\nhigh 0\nmax 4\noom 2\noom_kill 2\noom_group_kill 0\n",
        "vmstat": "pgfault 9\noom_kill 7\n"})
    assert read(proc, cgroups) == OomKills(f"{cgroups}/user.slice/ci/memory.events", 2, machine=False)


def test_cgroup_v1_memory_oom_control_and_a_namespace_root(tmp_path):
    proc, cgroups = _tree(tmp_path, "9:pids:/\n4:memory:/process_api/abc\n0::/\n", {
        "memory/memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n", "vmstat": "oom_kill 7\n"})
    assert read(proc, cgroups) == OomKills(f"{cgroups}/memory/memory.oom_control", 3, machine=False)


def test_the_machines_vmstat_where_no_cgroup_counts_and_none_where_nothing_does(tmp_path):
    proc, cgroups = _tree(tmp_path, "0::/\n", {"vmstat": "pgfault 9\noom_kill 7\n"})
    assert read(proc, cgroups) == OomKills(f"{proc}/vmstat", 7, machine=True)
    (tmp_path / "proc" / "vmstat").write_text("pgfault 9\n")  # a kernel before 4.13
    assert read(proc, cgroups) is None


def test_a_rise_of_the_counter_with_a_process_of_the_case_gone_fails_it_and_names_what_was_seen():
    before, after = OomKills("/cg/memory.events", 1, False), OomKills("/cg/memory.events", 2, False)
    assert rose(before, after) == 1 and rose(after, OomKills("/proc/vmstat", 9, True)) == 0
    verdict = judge(before, after, vanished=1, sigkilled={})
    assert verdict.failure is not None and "killed 1 process(es) in its cgroup, and 1 process(es) of the case ended " \
                                           "without reporting an exit" in verdict.failure, verdict
    assert "went from 1 to 2: a kill by SIGKILL" in verdict.failure, verdict
    assert judge(before, after, vanished=0, sigkilled={}).failure is None  # another process of the cgroup
    named = judge(before, after, 1, {1234: ("python", "worker.py")}).failure
    assert "(process 1234 (python worker.py) of the case was killed by SIGKILL while it ran)" in named, named


def test_a_rise_of_the_machines_counter_fails_only_where_a_process_of_the_case_vanished():
    before, after = OomKills("/proc/vmstat", 5, True), OomKills("/proc/vmstat", 6, True)
    assert judge(before, after, vanished=0, sigkilled={}).failure is None  # a kill elsewhere on the machine
    assert "on this machine, and 1 process(es) of the case ended" in judge(before, after, 1, {}).failure


def test_a_sigkill_seen_without_a_rise_is_a_note_not_a_failure():
    same = OomKills("/cg/memory.events", 1, False)
    verdict = judge(same, same, 1, {1234: ("python", "worker.py")})
    assert verdict.failure is None
    assert verdict.note == ("process 1234 (python worker.py) of the case was killed by SIGKILL while the case ran (the "
                            "kernel's OOM killer sends SIGKILL), but the kernel's count of OOM kills (/cg/memory.events) "
                            "did not rise: the script's own kill, the peak stands")
    unknown = judge(None, None, 1, {1234: None}).note
    assert unknown.startswith("process 1234 of the case") and "no count of the kernel's OOM kills" in unknown


def test_a_run_ctx_that_returns_after_the_oom_killer_ended_a_helper_fails_as_that_kill(monkeypatch):
    """isolate/child.py: the counter faked to rise between its two reads around run(ctx)."""
    reads = iter([OomKills("/cg/memory.events", 0, False), OomKills("/cg/memory.events", 1, False)])
    monkeypatch.setattr(child.oom_kills, "read", lambda: next(reads))
    counted = child.oom_kills.read()
    meter = SimpleNamespace(tree=SimpleNamespace(vanished=1, sigkilled={}))
    with pytest.raises(child.HelperKilled) as raised:
        child._helpers_killed(counted, meter, "the summary", {"loss": 1.0})
    assert raised.value.kind == "killed" and raised.value.summary == "the summary"
    assert str(raised.value).startswith("run(ctx) returned, but the kernel's OOM killer killed 1 process(es) in its "
                                        "cgroup"), raised.value
    same = iter([OomKills("/cg/memory.events", 1, False)] * 2)
    monkeypatch.setattr(child.oom_kills, "read", lambda: next(same))
    assert child._helpers_killed(child.oom_kills.read(), meter, None, {"loss": 1.0}) == {"loss": 1.0}
