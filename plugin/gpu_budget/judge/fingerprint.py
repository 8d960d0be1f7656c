"""What moves a peak besides the code: the measured children's setup, and what a difference means.

Every baseline entry stores the fingerprint it was recorded under; a run
compares it with its own and names the fields that differ. What is then
compared, and how closely, depends on what the field is shown to move
(docs/baselines.md, "Across machines"; benchmarks/RESULTS.md, "Across setups"):

- LIBRARIES (torch, transformers, ... and CUDA, the driver, the GPU, the
  card a case runs as on (`card=`: its allocator's cap), and the environment a
  case declares: the versions it lays over the running ones): compared as usual. Catching the regression an upgrade brings is what the
  gate is for.
- FLOOR (the packages the children import, the preload list, the kernel):
  measured to move only the import floor, the RSS a child
  inherits from the forkserver (packages a library imports only because they
  are installed: accelerate imports boto3, httpcore imports trio, +12 MiB).
  The floor is measured in every session, and the host RAM peak is compared
  after taking the floor's difference off. Not across preload lists
  (session/case_setup.py): a command's own interpreter is compared as measured,
  and a function case's host RAM, where the floor moved, not at all: what the
  forkserver no longer imports, a case that uses it imports itself, so its peak
  does not fall with the floor (docs/gpu-results.md: taking it off over-corrected).
- SETUP (the CPU capability the kernels run at, threads per child, the CPU
  model): move the peak itself, by an amount measured near the default
  tolerance (a host without AVX2 against the AVX2 pin, 2 threads against 1;
  another CPU model at the same pin, RESULTS.md 7b);
  compared with the floor taken off, at the test's tolerance, and always
  named: a regression the shift hides is caught at full sensitivity only
  against baselines of the runner's own setup.
- ALLOCATOR (PYTORCH_CUDA_ALLOC_CONF, the CUDA caching allocator's config):
  moves the allocated peak itself, as it rounds and splits blocks (S2 on an
  H200 with expandable_segments:True against without, docs/gpu-results.md:
  past the default tolerance, the host RAM tree within it): the allocated VRAM
  is not compared ("record a baseline for this setup"), host RAM is.
- FOREIGN (the allocator's mode and environment, transparent huge pages,
  glibc, and AVX-512 kernels on one side only: the pin off, measured at up to
  +4.2 %; the number of ranks a launcher case runs, which reshapes each rank's share;
  the libraries' modules loaded from bytecode or compiled from source (measure/host.py),
  which moves the host RAM peak by what compiling holds, not by a library's own
  change; the device a case trains on, `device=` switched on a GPU host, whose
  baselines share one folder: a CUDA run's host RAM holds the CUDA libraries, a
  CPU run's the weights and activations): the host RAM peak is not compared ("record a baseline for this
  setup"), the exact metrics (tensor bytes, allocated VRAM) still are.

The facts themselves are read by measure/host.py (the parent's of the host,
the probe child's of what a child of the forkserver sees); this module says
what a difference in each means (`between`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpu_budget.measure.host import CACHED, LIBRARY_PACKAGES, MIXED, SOURCE
from gpu_budget.model.setup import Fact, Fingerprint, Setup
from gpu_budget.units import format_size

LIBRARIES = (*LIBRARY_PACKAGES, "python", "cuda", "driver", "gpu_name", "gpu_memory", "card", "environment")
FLOOR = ("packages", "preload", "kernel")
SETUP = ("isa", "threads", "command_env", "cpu")
ALLOCATOR = ("cuda_alloc_conf",)
FOREIGN = ("malloc", "malloc_env", "thp", "glibc", "ranks", "bytecode", "interpreter", "device")
POLICY = {**dict.fromkeys(LIBRARIES, "libraries"), **dict.fromkeys(FLOOR, "floor"),
          **dict.fromkeys(SETUP, "setup"), **dict.fromkeys(ALLOCATOR, "allocator"), **dict.fromkeys(FOREIGN, "foreign")}
# Reported, never a difference of their own: the pin that produced `isa`, the CPU's own level, the floor itself,
# what `bytecode` was read from (how many modules had a usable .pyc, whether the children may write one)
SIZES = ("gpu_memory",)  # fields held in bytes: a row says them as sizes ("gpu_memory 16.00 GiB -> 16.20 GiB")
INFO = ("dispatch", "cpu_level", "floor", "launcher", "bytecode_seen")
UNKNOWN_WHEN_NONE = ("bytecode",)  # None: nothing to read it from (no library installed), never a difference
# Recorded before the field existed, a baseline holds its default: the interpreter's debug hooks were off (the
# baselines' venv is the README's), so a session under -X dev is named against it too
DEFAULT_WHEN_ABSENT: Mapping[str, Fact] = {"interpreter": None}
FLOOR_MOVED = 4 * 2**20  # a floor shift below the tolerance's absolute term moves no verdict, even left on

Diffs = Mapping[str, tuple[Fact, Fact]]  # field -> (baseline's, now)


@dataclass(frozen=True)
class Facts:
    """A fingerprint as the gate reads it: its fields, and those it reads by name (the import floor, bytes; what the
    bytecode field was read from; the digest of the packages imported, which a baseline file maps to their list; the
    preload list)."""

    fields: Fingerprint
    floor: int | None = None
    bytecode_seen: str | None = None
    packages: str | None = None
    preload: str | None = None
    bytecode: Fact = None

    @classmethod
    def from_json(cls, data: Fingerprint | None) -> Facts:
        data = data or {}
        return cls(data, data.get("floor"), data.get("bytecode_seen"), data.get("packages"), data.get("preload"),
                   data.get("bytecode"))


def differences(then: Fingerprint, now: Fingerprint) -> dict[str, tuple[Fact, Fact]]:
    """Field -> (baseline's, now) for every policy field the baseline recorded and that differs.

    A field the baseline does not hold (recorded before it existed) is not a difference, nor one that either side
    could not read (UNKNOWN_WHEN_NONE: `bytecode` where no library was installed to check); DEFAULT_WHEN_ABSENT's
    fields had one value only before they were recorded, and are read as it.
    """
    then = {**DEFAULT_WHEN_ABSENT, **then}
    return {k: (then[k], now.get(k)) for k in POLICY if k in then and then[k] != now.get(k)
            and not (k in UNKNOWN_WHEN_NONE and None in (then[k], now.get(k)))}


def between(then: Fingerprint | None, now: Fingerprint, packages_then: Mapping[str, str] | None = None,
            packages_now: Mapping[str, str] | None = None) -> Setup:
    """How this run's setup (`now`, its fingerprint) relates to a baseline entry's (`then`; None: no entry).

    A field whose only effect is the import floor (FLOOR) is named only when the floor moved by FLOOR_MOVED or
    more; below that it is kept quiet. `packages_*`: the package lists the fingerprints' digests name, where known.
    """
    old, new = Facts.from_json(then), Facts.from_json(now)
    diffs = differences(old.fields, now)
    shift = new.floor - old.floor if old.floor and new.floor else 0
    moved = abs(shift) >= FLOOR_MOVED
    quiet = {} if moved else {k: pair for k, pair in diffs.items() if policy_of(k, *pair) == "floor"}
    shown = {k: pair for k, pair in diffs.items() if k not in quiet}
    vram = not any(policy_of(k, *pair) == "allocator" for k, pair in shown.items())
    return Setup(shown, shift, tuple(describe(shown, packages_then, packages_now, now)),
                 tuple(describe(quiet, packages_then, packages_now, now)), worst_policy(shown), moved, vram)


def policy_of(key: str, then: Fact, now: Fact) -> str:
    """What a difference in `key` means; AVX-512 kernels on one side only move host RAM too far to compare."""
    if key == "isa" and "AVX512" in (str(then), str(now)):
        return "foreign"
    return POLICY[key]


def worst_policy(diffs: Diffs) -> str | None:
    """The strictest consequence among the differing fields: foreign > allocator > setup > floor > libraries (an
    allocator difference under a foreign one still keeps the allocated VRAM uncompared: Setup.vram_compared)."""
    kinds = {policy_of(k, *pair) for k, pair in diffs.items()}
    return next((kind for kind in ("foreign", "allocator", "setup", "floor", "libraries") if kind in kinds), None)


def describe(diffs: Diffs, packages_then: Mapping[str, str] | None = None, packages_now: Mapping[str, str] | None = None,
             facts_now: Fingerprint | None = None) -> list[str]:
    """'threads 1 -> 2', 'packages +boto3 1.43.11, +trio 0.31.0' ...: what a row says of each difference
    (`facts_now`: this run's fingerprint, whose reported fields say what a difference was read from)."""
    out = []
    for key, (then, now) in diffs.items():
        if key == "packages" and packages_then is not None and packages_now is not None:
            out.append("packages " + package_change(packages_then, packages_now))
        elif key == "bytecode":
            out.append(bytecode_change(then, now, Facts.from_json(facts_now).bytecode_seen))
        elif key == "card":  # None: run with no cap, as on the GPU's own memory
            out.append(f"card {then or 'none'} -> {now or 'none'}")
        elif isinstance(then, Mapping) and isinstance(now, Mapping):  # command_env: the variables that changed
            out.append(f"{key} {mapping_change(then, now)}")
        elif key in SIZES and isinstance(then, int) and isinstance(now, int):
            out.append(f"{key} {format_size(then)} -> {format_size(now)}")
        else:  # None: the field was not set (no PYTHONMALLOC, no malloc tunables), not Python's None
            out.append(f"{key} {'unset' if then is None else then} -> {'unset' if now is None else now}")
    return out


WRITE_BYTECODE = ("write their bytecode once (python -m compileall on the environment, uv's --compile-bytecode) "
                  "or run without PYTHONDONTWRITEBYTECODE")
_BYTECODE_SAID = {CACHED: "loaded from their .pyc", SOURCE: "compiled from source", MIXED: "partly compiled from source"}


def bytecode_change(then: Fact, now: Fact, seen: str | None) -> str:
    """'bytecode cached -> source (the libraries' modules loaded from their .pyc in the baseline's run, compiled
    from source in this one: 0 of 784 modules with a usable .pyc; ...): write their bytecode once ...': what a row
    says when the children compile what the baseline's loaded, or the reverse."""
    said = f"bytecode {then} -> {now} (the libraries' modules {_BYTECODE_SAID.get(then, then)} in the baseline's " \
           f"run, {_BYTECODE_SAID.get(now, now)} in this one"
    said += f": {seen})" if seen else ")"
    if now in (SOURCE, MIXED):
        said += f": {WRITE_BYTECODE}"
    return said


def compiled_line(facts: Fingerprint) -> str | None:
    """The summary's line where this session's children compiled the libraries from source (a uv environment, which
    uv installs without bytecode, on a host that sets PYTHONDONTWRITEBYTECODE): said from the first run, whose
    baseline would hold the compiler's memory, not only once a later run's setup differs from it."""
    read = Facts.from_json(facts)
    if read.bytecode not in (SOURCE, MIXED):
        return None
    return (f"bytecode: the libraries' modules {_BYTECODE_SAID[read.bytecode]} in the measured children"
            + (f" ({read.bytecode_seen})" if read.bytecode_seen else "")
            + f": their host RAM peaks hold the compiler's memory, and a baseline recorded here holds it too; {WRITE_BYTECODE}")


def mapping_change(then: Mapping[str, Fact], now: Mapping[str, Fact]) -> str:
    """'BATCH 8 -> 64, WANDB_MODE unset -> offline': each key whose value changed, in order, not both mappings whole
    (a command's environment holds the gate's pins too, among which one change is hard to find by eye)."""
    return ", ".join(f"{k} {'unset' if then.get(k) is None else then[k]} -> {'unset' if now.get(k) is None else now[k]}"
                     for k in sorted({*then, *now}) if then.get(k) != now.get(k))


def package_change(then: Mapping[str, str], now: Mapping[str, str]) -> str:
    lower_then = {k.lower(): (k, v) for k, v in then.items()}
    lower_now = {k.lower(): (k, v) for k, v in now.items()}
    parts = [f"+{lower_now[k][0]} {lower_now[k][1]}" for k in sorted(lower_now.keys() - lower_then.keys())]
    parts += [f"-{lower_then[k][0]}" for k in sorted(lower_then.keys() - lower_now.keys())]
    parts += [f"{lower_now[k][0]} {lower_then[k][1]} -> {lower_now[k][1]}" for k in sorted(lower_now.keys() & lower_then.keys())
              if lower_now[k][1] != lower_then[k][1]]
    return ", ".join(parts) or "(same)"
