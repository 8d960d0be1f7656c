"""Baseline files: schema-checked, broken ones named precisely, writes atomic and merging."""

import json
import multiprocessing
import os
import re

import pytest

from gpu_budget.judge import baselines, baselines_cli, files
from gpu_budget.judge.files import BaselineError
from gpu_budget.measure.device import DeviceInfo
from gpu_budget.measure.host import hardware_key
from gpu_budget.model.entry import Entry

GOOD_ENTRY = {"peaks": {"ram": 123, "vram_allocated": None}, "phases": {"load": {"ram": 100}},
              "tolerance": {"rel": 0.02, "abs": 0}, "fingerprint": {"torch": "2.13.0+cpu", "malloc": "steady"}}


def write(path, data):
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def test_missing_file_is_empty(tmp_path):
    assert files.load(tmp_path / "nope.json")["entries"] == {}


@pytest.mark.parametrize(
    "content, names",
    [
        ("{not json", ["not valid JSON"]),
        ({"schema": "other", "entries": {}}, ["schema"]),
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_a": {"peaks": {"ram": "big"}}}}},
         ["'test_a'", "peaks.ram", "'big'"]),
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_b": {"peaks": {"ram": 1, "watts": 3}}}}},
         ["'test_b'", "watts"]),
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_c": {**GOOD_ENTRY, "tolerance": {"rel": -1}}}}},
         ["'test_c'", "tolerance"]),
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_d": {"peaks": {"ram": -5}}}}}, ["'test_d'"]),
        # a hand-edited tolerance without its abs passed the check, then every case of the file failed on KeyError 'abs'
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_c2": {**GOOD_ENTRY, "tolerance": {"rel": 0.1}}}}},
         ["'test_c2'", "'tolerance' is {'rel': 0.1}"]),
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_c3": {**GOOD_ENTRY, "tolerance": {"rel": True, "abs": 0}}}}},
         ["'test_c3'", "'tolerance'"]),
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_e": {**GOOD_ENTRY, "ranks": {"first": {"ram": 1}}}}}},
         ["'test_e'", "'ranks'"]),
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_f": {**GOOD_ENTRY, "ranks": {"0": {"ram": -1}}}}}},
         ["'test_f'", "'ranks'"]),
        # a negative import floor, taken off as a shift, turned a +124 % growth into "improved" (-2065 %)
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_g": {**GOOD_ENTRY, "fingerprint": {"floor": -500_000_000}}}}},
         ["'test_g'", "fingerprint.floor is -500000000"]),
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_h": {**GOOD_ENTRY, "fingerprint": {"floor": True}}}}},
         ["'test_h'", "fingerprint.floor is True"]),
        # a host RAM peak of 0 B: every run read as a regression "> baseline 0 B", its change "-"
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_i": {**GOOD_ENTRY, "peaks": {"ram": 123, "ram_tree": 0}}}}},
         ["'test_i'", "peaks.ram_tree is 0"]),
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_j": {**GOOD_ENTRY, "peaks": {"ram": 0}}}}},
         ["'test_j'", "peaks.ram is 0"]),
        # no host RAM figure at all: the row passed, comparing nothing
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_k": {**GOOD_ENTRY, "peaks": {"ram": None, "ram_tree": None}}}}},
         ["'test_k'", "peaks.ram is null"]),
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_l": {**GOOD_ENTRY, "ranks": {"0": {"ram": 5, "ram_tree": 0}}}}}},
         ["'test_l'", "rank 0's ram_tree is 0"]),
        # no fingerprint: compared as if recorded on this setup, whatever machine it came from, without a word
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_m": {k: v for k, v in GOOD_ENTRY.items() if k != "fingerprint"}}}},
         ["'test_m'", "no 'fingerprint'"]),
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_n": {**GOOD_ENTRY, "fingerprint": {}}}}},
         ["'test_n'", "no 'fingerprint'"]),
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_o": {**GOOD_ENTRY, "fingerprint": {"floor": 5}}}}},
         ["'test_o'", "no 'fingerprint'"]),
        # a phase's bad figure was named only as "'phases' must map phase names to objects of metric -> byte count"
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_p": {**GOOD_ENTRY, "phases": {"run": {"ram": -1}}}}}},
         ["'test_p'", "phases['run'].ram is -1, expected a byte count"]),
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_q": {**GOOD_ENTRY, "phases": {"run": {"rss": 5}}}}}},
         ["'test_q'", "unknown metric 'rss' in phases['run']"]),
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_r": {**GOOD_ENTRY, "phases": {"run": [5]}}}}},
         ["'test_r'", "phases['run'] is [5], expected an object"]),
        # a command case's arguments, named where a run's differ (compare.command_note): a string would be compared
        # character by character
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_s": {**GOOD_ENTRY, "command": "python train.py"}}}},
         ["'test_s'", "'command' is 'python train.py', expected a list of the command's arguments"]),
        # a digit str.isdigit() takes and int() refuses ('²'): the case failed on a ValueError traceback, unnamed
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_t": {**GOOD_ENTRY, "ranks": {"\u00b2": {"ram": 5}}}}}},
         ["'test_t'", "'ranks'"]),
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_u": {**GOOD_ENTRY, "rank_phases": {"\u00b2": {}}}}}},
         ["'test_u'", "'rank_phases'"]),
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_v": {**GOOD_ENTRY, "spread": {
            "runs": 2, "by_metric": {}, "blocks": {"ram_tree": {"\u00b2": 5}}}}}}},
         ["'test_v'", "'spread'"]),
        # a byte count past any memory (a 400-digit one): judging it failed the case on an OverflowError traceback
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_w": {**GOOD_ENTRY, "fingerprint": {
            "torch": "2.13.0+cpu", "floor": 10**400}}}}}, ["'test_w'", "fingerprint.floor is 1000"]),
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_x": {**GOOD_ENTRY, "ranks": {"0": {"ram": 2**63}}}}}},
         ["'test_x'", "'ranks'"]),
        # a hand-edited tolerance under a misspelt key was read as no tolerance (the default's), kept, and never said
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_y": {**GOOD_ENTRY, "tolerence": {"rel": 0.5, "abs": 0}}}}},
         ["'test_y'", "unknown key 'tolerence'", "did you mean 'tolerance'?"]),
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_z": {**GOOD_ENTRY, "note": "re-recorded after the fix"}}}},
         ["'test_z'", "unknown key 'note' (a later version of pytest-gpu-budget may have written it", "an entry holds"]),
        # NaN and Infinity: Python read them and wrote them back, a committed file no strict JSON reader (jq) reads
        ({"schema": files.SCHEMA, "entries": {"tiny": {"t.py::test_aa": {**GOOD_ENTRY, "params": {"lr": float("nan")}}}}},
         ["entries.tiny['t.py::test_aa'].params.lr is NaN, which is not JSON", "write a number or null there"]),
        ({"schema": files.SCHEMA, "entries": {}, "note": [1, float("-inf")]}, ["note[1] is -Infinity, which is not JSON"]),
        # a tolerance's misspelt term beside its two: read by no code, never said
        ({"schema": files.SCHEMA, "entries": {"tiny": {"test_ab": {**GOOD_ENTRY, "tolerance": {"rel": 0.02, "abs": 0,
                                                                                                "rell": 0.5}}}}},
         ["'test_ab'", "unknown key 'rell' in 'tolerance': it holds 'rel' and 'abs' only"]),
    ],
)
def test_broken_file_names_file_and_entry(tmp_path, content, names):
    path = write(tmp_path / "test_mod.json", content)
    with pytest.raises(BaselineError) as info:
        files.load(path)
    message = str(info.value)
    assert str(path) in message
    for name in names:
        assert name in message


def test_a_file_of_another_format_version_is_named_and_kept_not_re_recorded(tmp_path):
    """A file a newer plugin wrote (schema gpu-budget-baselines/2): the advice was to delete it and re-record, which
    drops the entries that version recorded."""
    path = write(tmp_path / "test_mod.json", {"schema": "gpu-budget-baselines/2", "entries": {}})
    with pytest.raises(BaselineError) as info:
        files.load(path)
    message = str(info.value)
    assert str(path) in message and "'gpu-budget-baselines/2'" in message
    assert "another version of the plugin wrote it" in message and "delete it and re-record with" not in message


def test_an_entry_key_of_a_later_version_keeps_the_file_and_its_entries_and_says_so(tmp_path):
    """An entry a newer plugin wrote ('warmup', a key like none this version knows): the message said that version
    may have written it, then advised deleting the file and re-recording, which drops every entry of it. A write
    (--gpu-budget-update) refuses it, the file and its other entries left as they were."""
    data = {"schema": files.SCHEMA, "entries": {"tiny": {"t.py::test_old": GOOD_ENTRY,
                                                         "t.py::test_new": {**GOOD_ENTRY, "warmup": 3}}}}
    path = write(tmp_path / "test_mod.json", data)
    before = path.read_bytes()
    with pytest.raises(BaselineError) as info:
        files.load(path)
    message = str(info.value)
    assert str(path) in message and "entry 't.py::test_new'" in message and "unknown key 'warmup'" in message
    assert "a later version of pytest-gpu-budget may have written it" in message
    assert "keep the file" in message and "delete it and re-record" not in message
    with pytest.raises(BaselineError):
        files.write(path, "tiny", {"t.py::test_x": GOOD_ENTRY})
    assert path.read_bytes() == before


@pytest.mark.parametrize("entry", [{**GOOD_ENTRY, "peaks": {**GOOD_ENTRY["peaks"], "ram_swap": 1024}},
                                   {**GOOD_ENTRY, "tolerance": {"rel": 0.05, "abs": 0, "floor": 1024}}],
                         ids=["metric", "tolerance term"])
def test_an_unknown_metric_or_tolerance_term_says_the_file_may_be_a_newer_versions_to_keep(tmp_path, entry):
    """A metric or tolerance term a newer plugin wrote was refused with "delete it and re-record", which drops every
    entry of the file, the newer version's included. It may be a typo (fix it by hand) or a newer version's (keep the
    file): both are said, and no deleting without saying what it drops."""
    path = write(tmp_path / "test_mod.json", {"schema": files.SCHEMA, "entries": {"tiny": {"t.py::test_new": entry}}})
    with pytest.raises(BaselineError) as info:
        files.load(path)
    message = str(info.value)
    assert "a later version of pytest-gpu-budget" in message and "keep the file" in message, message
    assert "delete it and re-record with" not in message, message


def test_store_refuses_to_overwrite_a_broken_file(tmp_path):
    path = write(tmp_path / "m.json", "{broken")
    with pytest.raises(BaselineError):
        files.write(path, "tiny", {"test_x": GOOD_ENTRY})
    assert path.read_text() == "{broken"


def test_store_merges_and_prunes(tmp_path):
    path = tmp_path / "cpu-x86_64" / "m.json"
    files.write(path, "tiny", {"test_a": GOOD_ENTRY})
    files.write(path, "tiny", {"test_b": GOOD_ENTRY})
    files.write(path, "real", {"test_a": GOOD_ENTRY})
    data = files.load(path)
    assert set(data["entries"]["tiny"]) == {"test_a", "test_b"}
    files.write(path, "tiny", {}, prune_except={"test_b"})
    data = files.load(path)
    assert set(data["entries"]["tiny"]) == {"test_b"} and set(data["entries"]["real"]) == {"test_a"}
    assert list(path.parent.iterdir()) == [path]  # no temp or lock files left in baselines/


def _writer(path, i):
    files.write(path, "tiny", {f"test_{i}": GOOD_ENTRY})


def test_concurrent_writers_all_land(tmp_path):
    path = tmp_path / "m.json"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, i)) for i in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    assert set(files.load(path)["entries"]["tiny"]) == {f"test_{i}" for i in range(6)}


def test_hardware_keys():
    assert hardware_key(DeviceInfo(cuda=False)).startswith("cpu-")
    assert hardware_key(DeviceInfo(cuda=True, gpu_name="NVIDIA H100 80GB HBM3", gpu_memory=85 * 10**9)) == \
        "nvidia-h100-80gb-hbm3"
    assert hardware_key(DeviceInfo(cuda=True, gpu_name="NVIDIA GeForce RTX 3090", gpu_memory=24 * 2**30)) == \
        "nvidia-geforce-rtx-3090-24gb"


# -- hostile paths: a pull request controls what sits under baselines/ -------------------------------

@pytest.mark.parametrize("kind", ["fifo", "device", "symlink-to-device", "folder"])
def test_a_baseline_that_is_not_a_regular_file_fails_fast_naming_it(tmp_path, kind):
    path = tmp_path / "cpu-x86_64" / "test_mod.json"
    path.parent.mkdir()
    if kind == "fifo":
        os.mkfifo(path)  # opening it for reading would block until a writer came
    elif kind == "device":
        path.symlink_to("/dev/zero")
        path = path.resolve()
    elif kind == "symlink-to-device":
        path.symlink_to("/dev/zero")  # reading it would never end
    else:
        path.mkdir()
    with pytest.raises(BaselineError) as info:
        files.load(path)
    assert str(path) in str(info.value) and "not a regular file" in str(info.value)
    if kind == "symlink-to-device":
        assert "a symlink to /dev/zero" in str(info.value)


def test_a_huge_baseline_file_is_refused_without_reading_it(tmp_path):
    path = tmp_path / "test_mod.json"
    with open(path, "wb") as fh:
        fh.truncate(files.MAX_FILE_BYTES + 1)  # sparse: huge, costs no disk
    with pytest.raises(BaselineError, match=f"{path}.*over the {files.MAX_FILE_BYTES}"):
        files.load(path)


@pytest.mark.parametrize("kind, reason", [
    ("fifo", "is a FIFO, not a regular file: refusing to read it"),
    ("folder", "is a folder, not a regular file: refusing to read it"),
    ("huge", f"is {files.MAX_FILE_BYTES + 1} bytes, over the {files.MAX_FILE_BYTES} a baseline file may hold"),
    ("latin-1", "is not UTF-8 text (invalid continuation byte at byte 15)"),
])
def test_a_file_refused_before_parsing_says_why_and_nothing_else(tmp_path, kind, reason):
    """The read's own reason, not wrapped as a value the JSON parser refuses (BaselineError and UnicodeDecodeError are
    ValueErrors: a handler for the parser's ValueError caught them)."""
    path = tmp_path / "test_b.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "huge":
        with open(path, "wb") as fh:
            fh.truncate(files.MAX_FILE_BYTES + 1)
    else:
        path.write_bytes('{"schema": "caf\u00e9"}'.encode("latin-1"))
    with pytest.raises(BaselineError) as info:
        files.load(path)
    assert str(info.value).startswith(f"baseline file {path} {reason}"), str(info.value)
    assert "JSON parser" not in str(info.value)


def test_a_byte_order_mark_is_read_past_and_left_out_by_the_next_write(tmp_path):
    """Windows editors save UTF-8 with a BOM unasked: the file was refused as "not valid JSON (Unexpected UTF-8 BOM)",
    with "delete it and re-record", which loses every entry for an invisible byte."""
    path = tmp_path / "test_mod.json"
    files.write(path, "tiny", {"test_a": GOOD_ENTRY})
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert list(files.load(path)["entries"]["tiny"]) == ["test_a"]
    files.write(path, "tiny", {"test_b": GOOD_ENTRY})
    assert path.read_bytes().startswith(b"{") and sorted(files.load(path)["entries"]["tiny"]) == ["test_a", "test_b"]


def _hand_merged(path):
    """A file merged by hand as two top-level "entries" objects: json.loads alone keeps only the last."""
    first = json.dumps({"tiny": {"test_a": GOOD_ENTRY}})
    second = json.dumps({"tiny": {"test_b": GOOD_ENTRY}})
    return write(path, f'{{"schema": "{files.SCHEMA}", "entries": {first}, "entries": {second}, "packages": {{}}}}')


def test_a_key_given_twice_is_refused_naming_the_file_and_key_and_the_file_kept(tmp_path):
    path = _hand_merged(tmp_path / "test_mod.json")
    before = path.read_bytes()
    with pytest.raises(BaselineError) as info:
        files.load(path)
    assert str(info.value).startswith(f"baseline file {path} gives the key 'entries' twice in one object"), str(info.value)
    with pytest.raises(BaselineError, match="'entries' twice"):  # the next session's recording: nothing dropped
        files.write(path, "tiny", {"test_c": GOOD_ENTRY})
    assert path.read_bytes() == before


def test_a_test_id_given_twice_in_a_scale_is_refused_too(tmp_path):
    entry = json.dumps(GOOD_ENTRY)
    path = write(tmp_path / "test_mod.json",
                 f'{{"schema": "{files.SCHEMA}", "entries": {{"tiny": {{"test_a": {entry}, "test_a": {entry}}}}}}}')
    with pytest.raises(BaselineError, match=f"^baseline file {path} gives the key 'test_a' twice in one object"):
        files.load(path)


def test_a_write_past_the_read_limit_is_refused_and_the_file_left_readable(tmp_path):
    """The plugin never writes a file the next session would refuse to read (every case of the module failing)."""
    path = tmp_path / "test_mod.json"
    pad = {**GOOD_ENTRY, "params": {"pad": "x" * (files.MAX_FILE_BYTES - 2**20)}}
    files.write(path, "tiny", {"test_a": pad})  # padded to 1 MiB under the limit
    before = path.read_bytes()
    with pytest.raises(BaselineError) as info:
        files.write(path, "tiny", {"test_b": {**pad, "params": {"pad": "y" * 2**21}}})
    message = str(info.value)
    assert message.startswith(f"baseline file {path} would be ") and f"over the {files.MAX_FILE_BYTES} bytes" in message
    size = int(message.split(" would be ")[1].split(" bytes")[0])
    assert size > files.MAX_FILE_BYTES
    assert path.read_bytes() == before and list(tmp_path.iterdir()) == [path]  # no temp file left
    assert set(files.load(path)["entries"]["tiny"]) == {"test_a"}


def test_a_baselines_folder_that_is_a_file_is_named(tmp_path):
    (tmp_path / "cpu-x86_64").write_text("not a folder")
    with pytest.raises(BaselineError, match="cpu-x86_64 is a file, not a folder: move it away"):
        files.load(tmp_path / "cpu-x86_64" / "test_mod.json")


def test_a_file_or_a_dangling_link_above_the_hardware_folder_is_named_not_read_as_no_baseline(tmp_path):
    """A project without an ini file whose `baselines` is a file (or a link to a share not mounted): the store read as
    empty, and under CI every case said "no baseline recorded ... record one with --gpu-budget-update"."""
    (tmp_path / "baselines").write_text("not a folder")
    with pytest.raises(BaselineError, match=f"baselines folder {tmp_path / 'baselines'} is a file, not a folder"):
        files.load(tmp_path / "baselines" / "cpu-x86_64" / "test_mod.json")
    (tmp_path / "shared").symlink_to(tmp_path / "unmounted")
    with pytest.raises(BaselineError, match=f"is a symlink to {tmp_path / 'unmounted'}, which does not exist"):
        files.load(tmp_path / "shared" / "cpu-x86_64" / "test_mod.json")
    assert files.load(tmp_path / "new" / "cpu-x86_64" / "test_mod.json")["entries"] == {}  # not made yet: empty


def test_package_lists_are_kept_once_per_file_and_pruned_with_their_entries(tmp_path):
    path = tmp_path / "m.json"
    entry = {**GOOD_ENTRY, "fingerprint": {"packages": "aaa"}}
    files.write(path, "tiny", {"test_a": entry}, packages={"aaa": {"torch": "2.13.0"}})
    files.write(path, "tiny", {"test_b": {**GOOD_ENTRY, "fingerprint": {"packages": "bbb"}}},
                    packages={"bbb": {"torch": "2.14.0"}})
    data = files.load(path)
    assert data["packages"] == {"aaa": {"torch": "2.13.0"}, "bbb": {"torch": "2.14.0"}}
    assert baselines.packages_of(data, baselines.lookup(data, "tiny", "test_a")) == {"torch": "2.13.0"}
    files.write(path, "tiny", {}, prune_except={"test_b"})
    assert files.load(path)["packages"] == {"bbb": {"torch": "2.14.0"}}


def test_drop_removes_one_scale_everywhere_and_keeps_the_others(tmp_path, capsys):
    path = tmp_path / "cpu-x86_64" / "m.json"
    files.write(path, "tiny", {"test_a": GOOD_ENTRY})
    files.write(path, "real", {"test_a": GOOD_ENTRY})
    assert baselines_cli.main(["drop", "--scale", "tiny", str(tmp_path)]) == 0
    assert set(files.load(path)["entries"]) == {"real"}
    assert "dropped the 'tiny' entries" in capsys.readouterr().out


def test_drop_takes_files_too_and_names_a_path_that_is_neither(tmp_path, capsys):
    one, other = tmp_path / "hw" / "a.json", tmp_path / "hw" / "b.json"
    for path in (one, other):
        files.write(path, "real", {"test_a": GOOD_ENTRY})
    assert baselines_cli.main(["drop", "--scale", "real", str(one)]) == 0
    assert files.load(one)["entries"] == {} and set(files.load(other)["entries"]) == {"real"}
    with pytest.raises(SystemExit):
        baselines_cli.main(["drop", "--scale", "real", str(tmp_path / "nope.json")])
    assert "nope.json is neither a folder nor a baseline file" in capsys.readouterr().err


def test_an_entry_crosses_its_file_unchanged(tmp_path):
    """Read back as a typed Entry and written again, an entry is the same JSON."""
    path = tmp_path / "hw" / "m.json"
    raw = {"scenario": "s", "fixes": ["lora"], "params": {"b": 1}, "peaks": {"ram": 5, "ram_tree": 6},
           "phases": {"load": {"ram": 5}}, "tolerance": {"rel": 0.005, "abs": 4}, "fingerprint": {"torch": "x"},
           "recorded": "2026-11-25"}
    files.write(path, "tiny", {"t": raw})
    entry = baselines.lookup(files.load(path), "tiny", "t")
    assert isinstance(entry, Entry) and entry.peaks.ram_tree == 6 and entry.fixes == ("lora",)
    assert json.dumps(entry.to_json(), sort_keys=True) == json.dumps(raw, sort_keys=True)  # files sort their keys
    assert baselines.lookup(files.load(path), "tiny", "absent") is None


def test_a_baseline_file_that_is_a_symlink_is_written_through_the_link_the_link_kept(tmp_path):
    """It is read through its link, so it is written there too: replacing the link with a file of its own would
    leave the file it names (another hardware key's, a shared one) stale and turn a committed link into a file."""
    (tmp_path / "shared").mkdir()
    shared = write(tmp_path / "shared" / "test_mod.json", {"schema": files.SCHEMA, "entries": {"tiny": {"test_a": GOOD_ENTRY}}})
    link = tmp_path / "cpu-x86_64" / "test_mod.json"
    link.parent.mkdir()
    link.symlink_to(os.path.relpath(shared, link.parent))
    files.write(link, "tiny", {"test_b": GOOD_ENTRY})
    assert link.is_symlink() and link.resolve() == shared.resolve()
    assert sorted(json.loads(shared.read_text())["entries"]["tiny"]) == ["test_a", "test_b"]
    assert baselines_cli.main(["drop", "--scale", "tiny", str(link)]) == 0
    assert link.is_symlink() and json.loads(shared.read_text())["entries"] == {}
    assert sorted(p.name for p in link.parent.iterdir()) == ["test_mod.json"]
    assert sorted(p.name for p in shared.parent.iterdir()) == ["test_mod.json"]


def test_a_scale_no_case_runs_at_is_named(tmp_path):
    """entries.tiny renamed by hand to entries.huge read as a valid file: its cases read as having no baseline and
    were recorded afresh, and the "huge" entries stayed in the file for good."""
    path = tmp_path / "test_mod.json"
    path.write_text(json.dumps({"schema": files.SCHEMA, "entries": {"huge": {"test_a": {"peaks": {"ram": 1}}}}}))
    with pytest.raises(BaselineError, match=re.escape(f"baseline file {path}: scale 'huge': not a scale cases run at "
                                                      "(tiny, real)")):
        files.load(path)
