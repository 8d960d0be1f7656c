"""The fix library: named, documented, composable remediations of a Scenario.

A Fix transforms a Scenario, never a live model: applying one adds its name to
`Scenario.fixes` (the runner honours it through `ctx.has(name)`) and lays its
`params` over the scenario's knobs. Each fix declares its stage, what it needs
to run (a CUDA GPU, an importable package), what it costs (its trade-off),
which fixes it cannot be combined with, and which write-up proposes it, so
invalid combinations fail when a Scenario is built (at collection time) and the
remediation search (remediate.py) knows which sets to try, cheapest first.
This module holds the engine and the generic fixes (BUILTIN); a case study's
own fixes are registered by its folder under memtests/.

Checking a requirement never imports the package (importlib.util.find_spec),
so importing the plugin stays torch-free.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from gpu_budget.declare.env_vars import env_text
from gpu_budget.declare.params import Json, knobs
from gpu_budget.declare.refused import refusal

__tracebackhide__ = refusal  # a refused declaration in a test fails at the test's line (refused.py)

STAGES = ("load", "data", "model", "train", "runtime")
# The trade-off a fix asks for, mildest first; its rank orders the remediation search.
COSTS = {"none": 0, "slower": 1, "accuracy-risk": 2}
CUDA = "cuda"  # the one requirement that is not a package: the measured children's device says


ADDED_HERE = "gpu-budget"  # proposed_by of a remedy or control this project added to a case study: no write-up's


class FixError(ValueError):
    """An unknown fix, a conflicting pair, a missing companion fix or a malformed Fix."""


class FixChangesNothing(FixError):
    """A fix a command scenario applies or supports that sets only params its command never reads: refused when the
    Scenario is built, and left out of the remediation search, which names why, instead of running it."""


@dataclass(frozen=True)
class Control:
    """What a control fix measures: one effect of another fix alone, so FINDINGS.md splits that fix's saving in two.

    of:    the fix whose saving is split (S5's quantization is freezing plus 8-bit storage);
    alone: what the control measures, in a phrase ("freezing alone (the same weights frozen, kept fp32)");
    short: the same in a few words, for the comparison with the whole fix ("freezing alone");
    rest:  what the rest of the saving is ("8-bit storage on top").
    """

    of: str
    alone: str
    short: str
    rest: str

    def __post_init__(self) -> None:
        for name in ("of", "alone", "short", "rest"):  # written into FINDINGS.md: None would read "None"
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise FixError(f"Control {name}={value!r}: expected a non-empty string (Control(of='quantize', "
                               "alone='freezing alone', short='freezing', rest='8-bit storage on top'))")


@dataclass(frozen=True)
class Fix:
    """One remediation.

    name:        what `Scenario.with_fixes` and the runner's `ctx.has(name)` use.
    stage:       where it acts: load, data, model, train or runtime.
    doc:         what it does and what it trades, in a sentence or two.
    cost:        "none", "slower" or "accuracy-risk"; the search tries cheaper sets first.
    needs:       requirements: "cuda", or importable package names ("bitsandbytes", "peft", "funasr").
    conflicts:   fixes it cannot be combined with (symmetric: either side may declare it).
    requires:    fixes that must come with it where a scenario offers them as fixes
                 (load_in_8bit needs lora there; a scenario that always trains LoRA need not list it).
    replaces:    fixes the search drops when it applies this one (trainable_token_indices replaces
                 modules_to_save); replacing implies conflicting.
    proposed_by: the write-ups proposing it ("S1" .. "S5", the case studies in memtests/), or ADDED_HERE for a remedy
                 or control this project added to a case study; any label for a user's fix.
    params:      knobs it sets when applied (Scenario.with_params), for runners that read params.
    remedy:      False for a registered knob that reproduces a variant instead of remedying one
                 (all_linear, modules_to_save): valid in with_fixes, never tried by the search.
    args, env:   how it applies to a command scenario (a user's script or CLI): arguments appended to
                 the command line and environment variables set for it ("{param}" placeholders are
                 filled from the scenario's params). A command scenario accepts a fix that has
                 args, env or params (which its command reads through placeholders), nothing else.
    control:     for a control (remedy=False) that measures one effect of another fix alone: a Control.
    """

    name: str
    stage: str
    doc: str
    cost: str = "none"
    needs: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    replaces: tuple[str, ...] = ()
    proposed_by: tuple[str, ...] = ()
    params: Mapping[str, Json] = field(default_factory=dict)
    remedy: bool = True
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    control: Control | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.replace("_", "").replace("-", "").isalnum():
            raise FixError(f"fix name {self.name!r}: use letters, digits, '_' and '-'")
        where = f"fix {self.name!r}"
        if not isinstance(self.doc, str) or not self.doc.strip():  # the report and FINDINGS.md say what it does by it
            raise FixError(f"{where}: doc={self.doc!r}: expected a sentence or two of text: what it does and trades")
        if not isinstance(self.remedy, bool):  # "False" would read as true: a knob tried by the search as a remedy
            raise FixError(f"{where}: remedy={self.remedy!r}: expected True (a remedy the search tries) or False")
        try:
            object.__setattr__(self, "env", env_text(self.env, where))
            object.__setattr__(self, "params", knobs(self.params, where))  # laid over a scenario's knobs: JSON too
        except ValueError as exc:
            raise FixError(str(exc)) from None
        for name in ("needs", "conflicts", "requires", "replaces", "proposed_by", "args"):
            object.__setattr__(self, name, _texts(getattr(self, name), where, name, names=name != "args"))
        for need in self.needs:  # else never importable: the fix never tried, "needs torch>=2" where torch is
            if need != CUDA and (need.lower() == CUDA or not all(p.isidentifier() for p in need.split("."))):
                hint = "; write 'cuda' for a CUDA GPU" if need.lower() == CUDA else ""
                raise FixError(f"{where}: needs={self.needs!r}: {need!r} is no module name: needs holds 'cuda' or what "
                               "an import statement names ('bitsandbytes', 'sklearn' for scikit-learn), checked without "
                               f"importing it, with no version{hint}")
        if self.stage not in STAGES:
            raise FixError(f"fix {self.name!r}: stage {self.stage!r} is not one of {', '.join(STAGES)}")
        if not isinstance(self.cost, str) or self.cost not in COSTS:  # a list: "unhashable type", naming nothing
            raise FixError(f"fix {self.name!r}: cost {self.cost!r} is not one of {', '.join(COSTS)}")
        if self.name in (*self.conflicts, *self.requires, *self.replaces):
            raise FixError(f"fix {self.name!r} names itself in conflicts/requires/replaces")
        if set(self.requires) & set(self.conflicts + self.replaces):
            raise FixError(f"fix {self.name!r} both requires and conflicts with "
                           f"{sorted(set(self.requires) & set(self.conflicts + self.replaces))}")
        if self.control is not None and (not isinstance(self.control, Control) or self.remedy):
            raise FixError(f"fix {self.name!r}: control={self.control!r} needs a gpu_budget.fixes.Control and remedy=False")

    @property
    def applies_to_commands(self) -> bool:
        """Whether a command scenario can apply it: through arguments, environment, or params its command reads."""
        return bool(self.args or self.env or self.params)

    @property
    def rank(self) -> int:
        return COSTS[self.cost]

    def conflicts_with(self, other: Fix) -> bool:
        mine, theirs = (*self.conflicts, *self.replaces), (*other.conflicts, *other.replaces)
        return other.name in mine or self.name in theirs

    def to_json(self) -> dict[str, Json]:
        return {"name": self.name, "stage": self.stage, "cost": self.cost, "needs": list(self.needs),
                "conflicts": list(self.conflicts), "requires": list(self.requires),
                "replaces": list(self.replaces), "proposed_by": list(self.proposed_by),
                "params": dict(self.params), "remedy": self.remedy, "doc": self.doc,
                "args": list(self.args), "env": dict(self.env)}


_REGISTRY: dict[str, Fix] = {}


def register(fix: Fix, where: str = "") -> Fix:
    """Add a fix to the library (idempotent for an equal definition); returns it. where: what registers it (a
    scenario's supports=), said in an error.

    A different fix under a registered name is an error: two meanings of one
    name would make a baseline's `fixes` ambiguous.
    """
    if not isinstance(fix, Fix):
        raise FixError(f"register() takes a gpu_budget.Fix, got {fix!r}")
    known = _REGISTRY.get(fix.name)
    if known is not None and known != fix:
        raise FixError(f"{where + ': ' if where else ''}fix {fix.name!r} is already registered with a different "
                       f"definition ({known.stage}, {known.cost}: {known.doc!r}): give yours another name (one name, "
                       "one fix: a baseline's fixes name it)")
    _REGISTRY[fix.name] = fix
    return fix


def get(name: str, where: str = "") -> Fix:
    """The registered fix of that name; the error names the known ones (and `where` it was asked for)."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise FixError(f"{where + ': ' if where else ''}unknown fix {name!r} (registered: {', '.join(sorted(_REGISTRY))})") from None


@contextlib.contextmanager
def all_or_none() -> Iterator[None]:
    """Keep the fixes registered within only where the block ends well: a Scenario that fails to build (a misspelt
    companion) leaves no fix of its behind, so a corrected definition of the same name is not refused as a second
    meaning, and no lists name a fix that nothing declares."""
    before = set(_REGISTRY)
    try:
        yield
    except BaseException:
        for name in set(_REGISTRY) - before:
            del _REGISTRY[name]
        raise


def registered() -> tuple[Fix, ...]:
    return tuple(_REGISTRY.values())


_EXAMPLES = {"args": ", one per argument (args=('--per_device_train_batch_size', '{batch_size}'))",
             "needs": " (needs=('cuda', 'bitsandbytes'))"}


def _texts(value: object, where: str, label: str, names: bool = True) -> tuple[str, ...]:
    """A Fix's field of names (or a command's arguments: names=False) as a tuple of strings, a bare string being one;
    anything else (a blank name too: "" is no fix, package or write-up, where "" is an argument) a FixError naming the
    field and the value, not Python's "'int' object is not iterable"."""
    texts = (value,) if isinstance(value, str) else None
    if texts is None and isinstance(value, Iterable) and not isinstance(value, bytes | Mapping):
        value = tuple(value)  # an iterator is read once
        texts = value if all(isinstance(v, str) for v in value) else None
    if texts is not None and names and not all(t.strip() for t in texts):
        raise FixError(f"{where}: {label}={value!r}: expected non-empty names")
    padded = next((t for t in texts or () if names and t != t.strip()), None)
    if padded is not None:  # needs=(" peft",): never importable, so the fix was never tried; a rival never matched
        raise FixError(f"{where}: {label}={value!r}: {padded!r} has spaces at its ends, which no fix, package or "
                       f"write-up's name holds; write {padded.strip()!r}")
    if texts is not None:
        return texts
    example = _EXAMPLES.get(label, f" ({label}=('a', 'b'))")
    raise FixError(f"{where}: {label}={value!r}: expected strings{example}")


def resolve(entries: str | Fix | Iterable[str | Fix], where: str = "") -> tuple[Fix, ...]:
    """Names or Fix objects (a user's own, registered here) -> Fix objects, in order, without repeats; one given bare
    is one."""
    out: dict[str, Fix] = {}
    for entry in entries_of(entries, where, "supports"):
        fix = get(name_of(entry, where), f"{where + ': ' if where else ''}supports=")
        out[fix.name] = fix
    return tuple(out.values())


def entries_of(value: str | Fix | Iterable[str | Fix] | None, where: str = "",
               label: str = "fixes") -> tuple[str | Fix, ...]:
    """Fixes as given: a bare name or Fix is one fix (as a Fix's own tuple fields take one), not its letters; None is
    none (fixes=None, supports=None: the defaults, not a TypeError). What holds no fixes (a number, bytes, a
    mapping) is a FixError naming `label` and the value, not Python's "'int' object is not iterable"."""
    if value is None:
        return ()
    if isinstance(value, (str, Fix)):
        return (value,)
    if not isinstance(value, Iterable) or isinstance(value, bytes | Mapping):
        raise FixError(f"{where + ': ' if where else ''}{label}={value!r}: expected fix names or gpu_budget.Fix "
                       f"objects ({label}=('a', 'b'))")
    return tuple(value)


def name_of(entry: str | Fix, where: str = "") -> str:
    """A fix's name: a Fix object is registered on the way; anything but a name or a Fix is an error naming it."""
    if isinstance(entry, Fix):
        return register(entry, where).name
    if not isinstance(entry, str):
        raise FixError(f"{where + ': ' if where else ''}fix {entry!r} is not a fix's name: give names "
                       "(with_fixes('a', 'b'), fixes=('a', 'b')) or gpu_budget.Fix objects")
    return entry


def validate(names: Iterable[str], offered: Iterable[Fix] | None = None, where: str = "") -> tuple[Fix, ...]:
    """The Fix objects of a combination, or FixError naming the unknown fix or both fixes of a bad pair (a declared
    conflict, or one param set to two values: the later fix would win, and the earlier be reported as applied).

    offered: the fixes the scenario's runner supports (None: every registered fix).
    """
    prefix = f"{where}: " if where else ""
    table = {f.name: f for f in (registered() if offered is None else offered)}
    chosen = []
    for name in names:
        if name not in table and name in _REGISTRY:  # spelled right, not in the scenario's supports=
            raise FixError(f"{prefix}fix {name!r} is not one this scenario supports (it supports: {', '.join(table)}): "
                           "add it to supports= if its runner honours it")
        if name not in table:
            whose = "this scenario supports" if offered is not None else "registered"
            raise FixError(f"{prefix}unknown fix {name!r} ({whose}: {', '.join(table) or 'none'})")
        chosen.append(table[name])
    for i, a in enumerate(chosen):
        for b in chosen[i + 1:]:
            clash = param_clash(a, b)  # the last one would win
            if a.conflicts_with(b) or clash:
                why = _why(a, b) if not clash else f"both set {clash[0]}: {a.params[clash[0]]!r} and {b.params[clash[0]]!r}"
                raise FixError(f"{prefix}fixes {a.name!r} and {b.name!r} conflict: they cannot be applied together ({why})")
    present = {f.name for f in chosen}
    for fix in chosen:
        unknown_companion(fix, table, prefix)
        for companion in fix.requires:
            if companion in table and companion not in present:
                raise FixError(f"{prefix}fix {fix.name!r} needs fix {companion!r} with it: "
                               f"with_fixes({companion!r}, {fix.name!r})")
    return tuple(chosen)


def param_clash(a: Fix, b: Fix) -> list[str]:
    """The params `a` and `b` both set, to different values: applied together, the later would win."""
    return [k for k in a.params if k in b.params and a.params[k] != b.params[k]]


def unknown_companion(fix: Fix, table: Mapping[str, Fix], prefix: str = "") -> None:
    """FixError where `fix` requires a fix no one registered or offers: a misspelt companion would never be
    required (requires= binds only where the scenario offers it), so the fix would run without it."""
    for companion in fix.requires:
        if companion not in table and companion not in _REGISTRY:
            raise FixError(f"{prefix}fix {fix.name!r} requires {companion!r}, which is no registered fix "
                           f"(registered: {', '.join(sorted(_REGISTRY))})")


def unknown_rival(fix: Fix, table: Mapping[str, Fix], prefix: str = "") -> None:
    """FixError where `fix` conflicts with or replaces a fix no one registered or offers: a misspelt name keeps
    nothing apart, so the search would run (and might answer) a set the fix declares impossible. Checked when the
    search starts, every fix known by then (the fix it names may be registered after the one naming it)."""
    for what, names in (("conflicts", fix.conflicts), ("replaces", fix.replaces)):
        for other in names:
            if other not in table and other not in _REGISTRY:
                raise FixError(f"{prefix}fix {fix.name!r} has {what}={names!r}: {other!r} is no registered fix "
                               f"(registered: {', '.join(sorted(_REGISTRY))})")


def _why(a: Fix, b: Fix) -> str:
    if b.name in a.replaces or a.name in b.replaces:
        new, old = (a, b) if b.name in a.replaces else (b, a)
        return f"{new.name} replaces {old.name}"
    return f"{a.name if b.name in a.conflicts else b.name} declares the conflict"


def missing(fix: Fix, cuda: bool, installed: Callable[[str], bool] | None = None) -> list[str]:
    """The requirements of `fix` this host lacks: 'cuda' from the device probe, packages by find_spec (`installed`:
    where the case runs in an environment of its own, whether its interpreter finds a module)."""
    out = []
    for need in fix.needs:
        if need == CUDA:
            if not cuda:
                out.append(CUDA)
        elif not (installed or _installed)(need):
            out.append(need)
    return out


def _installed(name: str) -> bool:
    """Whether module `name` is importable, importing nothing: a dotted name is looked up in its package's folders
    (find_spec of "a.b" would import "a", and raise where "a" is missing)."""
    top, *subs = name.split(".")
    spec = importlib.util.find_spec(top)
    for sub in subs:
        if spec is None or spec.submodule_search_locations is None:
            return False
        spec = importlib.machinery.PathFinder.find_spec(f"{spec.name}.{sub}", spec.submodule_search_locations)
    return spec is not None


def _builtin(*fixes: Fix) -> tuple[str, ...]:
    return tuple(register(fix).name for fix in fixes)


# The generic fixes: remediations any fine-tune can take, named as runners read them (ctx.has). A fix that only
# makes sense for one case study (wav2vec2's feature encoder, S4's wrap order) is defined and registered in that
# case study's folder (memtests/<scenario>/fixes.py) and listed in its Scenario's `supports`.
BUILTIN = _builtin(
    # load
    Fix("low_cpu_mem_usage", "load", "from_pretrained(low_cpu_mem_usage=True): meta-device init "
        "(transformers 5 always does this and drops the flag)", proposed_by=("S1",)),
    Fix("load_in_8bit", "load", "bitsandbytes int8 weights (frozen; trained through adapters)", cost="accuracy-risk",
        needs=("bitsandbytes",), conflicts=("load_in_4bit",), requires=("lora",), proposed_by=("S1", "S3")),
    Fix("load_in_4bit", "load", "bitsandbytes nf4 weights (frozen; trained through adapters)", cost="accuracy-risk",
        needs=("bitsandbytes",), requires=("lora",), proposed_by=("S1",)),
    # data
    Fix("truncate", "data", "cap each example at params['max_seconds'] (audio) or the scenario's maximum length; "
        "the rest of a long example is never seen", cost="accuracy-risk", proposed_by=("S1", "S2")),
    Fix("lazy_data", "data", "prepare examples on the fly (datasets.with_transform) instead of materialising "
        "the whole mapped dataset; work repeats every epoch", cost="slower", proposed_by=("S1",)),
    Fix("length_bucketing", "data", "group examples of similar length into a batch: less padding",
        proposed_by=("S2",)),
    Fix("fewer_workers", "data", "one DataLoader worker instead of several: one copy of what a worker holds; "
        "data loading overlaps less with the step", cost="slower", params={"dataloader_workers": 1},
        proposed_by=(ADDED_HERE,)),
    # model
    Fix("lora", "model", "PEFT LoRA adapters instead of full fine-tuning; far fewer trainable parameters",
        cost="accuracy-risk", needs=("peft",), proposed_by=("S1",)),
    Fix("prepare_model_for_kbit_training", "model", "PEFT's kbit preparation: upcasts 16-bit weights to "
        "fp32 and turns on gradient checkpointing (when it can see the model)", cost="slower",
        needs=("peft",), proposed_by=("S4",)),
    Fix("pad_to_multiple_of", "model", "resize the embeddings to a multiple of params['pad_multiple'] (64)",
        proposed_by=(ADDED_HERE,)),
    # train
    Fix("gradient_checkpointing", "train", "recompute activations in backward instead of keeping them: "
        "another forward per step", cost="slower", proposed_by=("S2", "S4")),
    Fix("smaller_batch", "train", "half the micro-batch with 2 accumulation steps: the same effective "
        "batch in two passes", cost="slower", proposed_by=("S5", "S3")),
    Fix("amp", "train", "CUDA autocast to float16 (on CPU a no-op unless params['amp_on_cpu'])",
        cost="accuracy-risk", needs=(CUDA,), proposed_by=("S2", "S3")),
    # runtime
    Fix("gc_collect", "runtime", "gc.collect() (and torch.cuda.empty_cache()) after each phase",
        cost="slower", proposed_by=("S1",)),
    Fix("malloc_trim", "runtime", "glibc malloc_trim(0) after each step: the heap returns freed memory",
        cost="slower", proposed_by=(ADDED_HERE,)),
    Fix("empty_cache", "runtime", "torch.cuda.empty_cache() after each step: the caching allocator "
        "returns cached blocks", cost="slower", needs=(CUDA,), proposed_by=("S2",)),
    Fix("expandable_segments", "runtime", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: less "
        "fragmentation in the caching allocator (a command gets the variable, replacing any value its scenario "
        "sets)", needs=(CUDA,), proposed_by=("S2",), env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}),
)
