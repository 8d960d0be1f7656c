"""measure/host_memory.py: the host memory a measured child can hold, MemTotal lowered to its cgroup's limit."""

from gpu_budget.measure.host_memory import host_memory

GiB = 2**30


def fake(tmp_path, membership: str, limits: dict[str, str], total_kib: int = 32 * 2**20):
    proc, cgroups = tmp_path / "proc", tmp_path / "cgroup"
    (proc / "self").mkdir(parents=True)
    (proc / "meminfo").write_text(f"MemTotal:       {total_kib} kB\nMemFree:        1 kB\n")
    (proc / "self" / "cgroup").write_text(membership)
    for path, value in limits.items():
        (cgroups / path).parent.mkdir(parents=True, exist_ok=True)
        (cgroups / path).write_text(value + "\n")
    return proc, cgroups


def test_memtotal_where_no_cgroup_limits_it(tmp_path):
    assert host_memory(*fake(tmp_path, "0::/\n", {"memory.max": "max"})) == 32 * GiB


def test_the_lowest_cgroup_v2_limit_of_the_group_and_its_ancestors(tmp_path):
    limits = {"ci/memory.max": str(12 * GiB), "ci/job/memory.max": str(16 * GiB), "memory.max": "max"}
    assert host_memory(*fake(tmp_path, "0::/ci/job\n", limits)) == 12 * GiB


def test_a_cgroup_v1_limit_and_its_no_limit_figure(tmp_path):
    v1 = "4:memory:/job\n0::/\n"
    assert host_memory(*fake(tmp_path, v1, {"memory/job/memory.limit_in_bytes": str(8 * GiB)})) == 8 * GiB
    unlimited = {"memory/job/memory.limit_in_bytes": "9223372036854771712"}
    assert host_memory(*fake(tmp_path / "u", v1, unlimited)) == 32 * GiB


def test_nothing_readable_is_unknown(tmp_path):
    assert host_memory(tmp_path / "none", tmp_path / "none") is None
