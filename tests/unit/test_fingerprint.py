"""The setup fingerprint: what it reads, which fields differ, and the policy each difference gets."""

import os

import pytest

from gpu_budget.isolate import dispatch
from gpu_budget.judge import fingerprint
from gpu_budget.judge.fingerprint import POLICY, differences, package_change, worst_policy
from gpu_budget.measure import host

CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 9B14
flags\t\t: fpu sse sse2 ssse3 sse4_1 sse4_2 cx16 popcnt lahf_lm avx avx2 bmi1 bmi2 f16c fma movbe xsave {extra}
"""


@pytest.mark.parametrize("extra, level", [
    ("avx512f avx512bw avx512cd avx512dq avx512vl", "x86-64-v4"),
    ("", "x86-64-v3"),
])
def test_cpu_model_and_level_from_cpuinfo(tmp_path, monkeypatch, extra, level):
    path = tmp_path / "cpuinfo"
    path.write_text(CPUINFO.format(extra=extra))
    model, flags = host.cpu_info(str(path))
    assert model == "AMD EPYC 9B14"
    monkeypatch.setattr(host.platform, "machine", lambda: "x86_64")
    assert host.x86_level(flags) == level
    assert host.x86_level({"sse2"}) == "x86-64"


def test_every_policy_field_has_one_kind():
    kinds = [fingerprint.LIBRARIES, fingerprint.FLOOR, fingerprint.SETUP, fingerprint.ALLOCATOR, fingerprint.FOREIGN]
    names = [name for kind in kinds for name in kind]
    assert len(names) == len(set(names)) == len(POLICY)
    assert not set(fingerprint.INFO) & set(POLICY)  # reported fields are never a difference of their own


def test_differences_name_only_recorded_fields_that_changed():
    then = {"torch": "2.13.0", "threads": 1, "floor": 400, "isa": "AVX2"}
    now = {"torch": "2.13.0", "threads": 2, "floor": 388, "isa": "AVX2", "glibc": "glibc 2.39"}
    # glibc: not recorded by the baseline (older entry), so not a difference; floor: reported, corrected, not a field
    assert differences(then, now) == {"threads": (1, 2)}


@pytest.mark.parametrize("fields, policy", [
    ({}, None),
    ({"torch": ("2.13.0", "2.14.0")}, "libraries"),
    ({"torch": (1, 2), "packages": ("a", "b")}, "floor"),
    ({"packages": ("a", "b"), "isa": ("AVX2", "DEFAULT")}, "setup"),
    ({"threads": (1, 2), "malloc": ("steady", "system")}, "foreign"),
])
def test_the_strictest_difference_decides(fields, policy):
    assert worst_policy(fields) == policy


def test_package_change_names_added_removed_and_changed():
    then = {"torch": "2.13.0", "numpy": "2.4.6", "six": "1.16"}
    now = {"torch": "2.13.0", "numpy": "2.4.7", "boto3": "1.43.11", "trio": "0.31.0"}
    assert package_change(then, now) == "+boto3 1.43.11, +trio 0.31.0, -six, numpy 2.4.6 -> 2.4.7"
    described = fingerprint.describe({"packages": ("aaa", "bbb")}, then, now)
    assert described == ["packages +boto3 1.43.11, +trio 0.31.0, -six, numpy 2.4.6 -> 2.4.7"]


def test_a_gpu_memory_difference_is_said_as_sizes():
    """It read "gpu_memory 17179869184 -> 17394617548"."""
    said = fingerprint.describe({"gpu_memory": (16 * 2**30, 17_394_617_548), "threads": (1, 2)})
    assert said == ["gpu_memory 16.00 GiB -> 16.20 GiB", "threads 1 -> 2"]


def test_a_field_not_set_on_one_side_is_said_unset():
    """`PYTHONMALLOC=malloc pytest --gpu-budget` against a plain baseline read "interpreter None -> ..."."""
    said = fingerprint.describe({"interpreter": (None, "PYTHONMALLOC=malloc"), "malloc_env": ("M_ARENA_MAX=2", None)})
    assert said == ["interpreter unset -> PYTHONMALLOC=malloc", "malloc_env M_ARENA_MAX=2 -> unset"]


def test_host_facts_record_the_allocator_environment():
    facts = host.host_facts({"MALLOC_ARENA_MAX": "2", "PATH": "/bin", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
                                   threads=1, malloc="steady", dispatch="avx2", preload=("torch",))
    assert facts["malloc_env"] == "MALLOC_ARENA_MAX=2"
    assert facts["cuda_alloc_conf"] == "expandable_segments:True"
    assert (facts["threads"], facts["dispatch"], facts["preload"]) == (1, "avx2", "torch")
    assert facts["glibc"] is None or facts["glibc"].startswith("glibc")


def test_child_facts_read_the_floor_and_the_packages_imported():
    facts = host.child_facts()
    assert facts["floor"] > 10 * 2**20  # this interpreter's resident size
    assert "pytest" in facts["packages"]
    assert host.packages_digest(facts["packages"]) == host.packages_digest(dict(reversed(facts["packages"].items())))


def test_dispatch_pin_caps_x86_at_avx2_and_leaves_what_the_environment_sets():
    assert dispatch.pin_env("avx2", "x86_64", environ={}) == dispatch.AVX2
    assert dispatch.pin_env("avx2", "x86_64", environ={"ATEN_CPU_CAPABILITY": "default"}) == {
        "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}
    assert dispatch.pin_env("native", "x86_64", environ={}) == {}
    assert dispatch.pin_env("avx2", "aarch64", environ={}) == {}
    with pytest.raises(ValueError, match="'avx9'"):
        dispatch.pin_env("avx9")


def test_pin_reaches_the_children_and_not_this_process():
    from gpu_budget.isolate import forkserver

    before = dict(os.environ)
    device = forkserver.probe(preload=())
    assert dict(os.environ) == before
    for key, value in dispatch.pin_env("avx2", environ=before).items():
        assert forkserver.forkserver_environ("avx2")[key] == value
    assert device.setup["floor"] > 0


def test_a_preload_module_that_failed_to_import_is_marked_in_the_fingerprint():
    """The forkserver skips a preload import that fails, silently; the floor is then made without it (a GPU host
    missing one wheel read S2's floor 136 MiB lower), so the fingerprint says so and the setup policy sees it."""
    from gpu_budget.measure.host import NOT_IMPORTED, preload_seen

    assert preload_seen(["json", "os"], {"json": 1, "os": 1}) == "json os"
    assert preload_seen(["json", "s1_runner"], {"json": 1}) == f"json s1_runner{NOT_IMPORTED}"
    assert preload_seen((), {}) == ""


def test_a_baseline_recorded_before_the_interpreter_field_reads_as_without_debug_hooks():
    assert differences({"python": "3.11.7"}, {"python": "3.11.7", "interpreter": None}) == {}
    assert differences({"python": "3.11.7"}, {"python": "3.11.7", "interpreter": "dev mode"}) == \
        {"interpreter": (None, "dev mode")}
    assert worst_policy(differences({}, {"interpreter": "PYTHONMALLOC=malloc"})) == "foreign"


def test_interpreter_hooks_are_none_for_python_s_default(monkeypatch):
    monkeypatch.delenv("PYTHONMALLOC", raising=False)
    assert host.interpreter_hooks() is None or os.environ.get("PYTHONDEVMODE") or host.sys.flags.dev_mode
    assert host.interpreter_hooks({"PYTHONMALLOC": "debug"}) in ("PYTHONMALLOC=debug", "dev mode, PYTHONMALLOC=debug")


def test_a_changed_mapping_names_each_key_that_changed_in_order():
    then = {"OMP_NUM_THREADS": "1", "BATCH": "8", "GONE": "x"}
    now = {"NEW": "y", "BATCH": "64", "OMP_NUM_THREADS": "1"}
    assert fingerprint.describe({"command_env": (then, now)}) == ["command_env BATCH 8 -> 64, GONE x -> unset, NEW unset -> y"]
