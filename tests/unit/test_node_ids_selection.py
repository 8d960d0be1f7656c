"""node_ids.py and narrow.py's selection: node ids on the command line given to the base as their files, and of those
files the tests the node ids name kept, as pytest reads a node id."""

from pathlib import Path
from types import SimpleNamespace

from gpu_budget.against import narrow
from gpu_budget.against.base_paths import BasePaths
from gpu_budget.against.node_ids import as_files, lines


def test_node_ids_are_given_as_their_file_once_and_one_a_whole_argument_gives_is_folded(tmp_path):
    mem, other = tmp_path / "memtests" / "test_mem.py", tmp_path / "test_other.py"
    named = [("memtests/test_mem.py::test_a", mem), ("memtests/test_mem.py::TestC::test_b[x]", mem),
             ("test_other.py::test_c", other), ("test_other.py", other)]
    base = as_files(BasePaths(), named)
    args = ["-k", "a", *(arg for arg, _ in named)]
    assert base.base_args(args) == ["-k", "a", "memtests/test_mem.py", "test_other.py"]
    assert base.selected == ("memtests/test_mem.py::test_a", "memtests/test_mem.py::TestC::test_b[x]")
    assert base.gone() == []
    assert lines(base.selected[:1], tmp_path, lambda a: a) == f"{mem}::test_a\n"


def test_a_node_id_in_a_file_ref_lacks_stays_gone_and_one_renamed_keeps_its_old_path(tmp_path):
    new, moved = tmp_path / "test_new.py", tmp_path / "test_b.py"
    instead = {"test_new.py::test_x": (), "test_b.py::test_y": ("old/test_b.py::test_y",)}
    base = as_files(BasePaths(instead=instead), [("test_new.py::test_x", new), ("test_b.py::test_y", moved)])
    assert base.gone() == ["test_new.py::test_x"]
    assert base.base_args(["test_new.py::test_x", "test_b.py::test_y"]) == ["old/test_b.py"]
    assert base.selected == ("old/test_b.py::test_y",)


def test_the_selection_keeps_what_pytest_would_select_by_the_node_id(tmp_path):
    path = tmp_path / "test_mem.py"
    named = {str(path): ["test_fn", "TestC"]}

    def item(rest: str, where: Path = path):
        return SimpleNamespace(path=where, nodeid=f"test_mem.py::{rest}")

    kept = [rest for rest in ("test_fn", "test_fn[a-1]", "test_fn_other", "TestC::test_m", "TestCx::test_m")
            if narrow._named(item(rest), named)]
    assert kept == ["test_fn", "test_fn[a-1]", "TestC::test_m"]
    assert narrow._named(item("anything", tmp_path / "test_elsewhere.py"), named)


class Compared:
    """An item as pytest's are (equal only to itself), counting every comparison made of it with another."""

    made = 0

    def __init__(self, nodeid: str, path: Path) -> None:
        self.nodeid, self.path = nodeid, path

    def __eq__(self, other: object) -> bool:
        Compared.made += 1
        return self is other

    __hash__ = object.__hash__


def narrowed(tmp_path, monkeypatch, items, only):
    """narrow's hook over `items`, ONLY_ENV naming `only`: (the items kept, the items it said it deselected)."""
    (tmp_path / "only").write_text("".join(f"{nodeid}\n" for nodeid in only))
    monkeypatch.setenv(narrow.ONLY_ENV, str(tmp_path / "only"))
    monkeypatch.delenv(narrow.SELECT_ENV, raising=False)
    dropped = []
    config = SimpleNamespace(hook=SimpleNamespace(pytest_deselected=lambda items: dropped.extend(items)))
    narrow.pytest_collection_modifyitems(config, items)
    return items, dropped


def test_the_deselection_keeps_the_order_and_each_duplicate_and_compares_no_two_items(tmp_path, monkeypatch):
    """The deselected were found as `item not in kept` over lists: each dropped item compared with every kept one,
    quadratic in the collection (20,000 items, half kept: 100,000,000 comparisons). Each item is now looked at once:
    the kept keep their order, a node id collected twice (--keep-duplicates) is kept or dropped twice."""
    path = tmp_path / "test_mem.py"
    ids = ["test_f[1]", "test_f[0]", "test_f[1]", "test_g", "test_f[2]", "test_g", "test_f[3]"]
    items = [Compared(f"test_mem.py::{rest}", path) for rest in ids]
    wanted = {"test_mem.py::test_f[1]", "test_mem.py::test_f[3]", "test_mem.py::test_f[0]"}
    given = list(items)
    Compared.made = 0
    kept, dropped = narrowed(tmp_path, monkeypatch, items, wanted)
    assert Compared.made == 0, f"{Compared.made} comparisons of one item with another"
    assert [id(i) for i in kept] == [id(i) for i in given if i.nodeid in wanted]
    assert [id(i) for i in dropped] == [id(i) for i in given if i.nodeid not in wanted]
    assert [i.nodeid.partition("::")[2] for i in kept] == ["test_f[1]", "test_f[0]", "test_f[1]", "test_f[3]"]
