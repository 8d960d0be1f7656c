"""judge/keys.py: a case's baseline key holds its file's path; legacy keys are read where no other file owns them."""

from pathlib import Path

from gpu_budget.judge import files, keys
from gpu_budget.model import case_id


def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    for sub in ("a", "b"):
        (tmp_path / "tests" / sub).mkdir(parents=True)
        (tmp_path / "tests" / sub / "test_same.py").write_text("")
    return tmp_path / "tests" / "a" / "test_same.py", tmp_path / "tests" / "b" / "test_same.py"


def test_a_key_holds_the_file_s_path_from_its_project_root(tmp_path):
    a, b = project(tmp_path)
    assert keys.case_key(a, "test_x") == "tests/a/test_same.py::test_x"
    assert keys.case_key(b, "test_x[2]", "lora") == "tests/b/test_same.py::test_x[2]::lora"
    assert keys.case_key(a, "test_x") != keys.case_key(b, "test_x")


def test_a_packages_key_is_taken_from_the_project_holding_the_shared_baselines_folder(tmp_path):
    """A monorepo: one pytest.ini at the top, a pyproject.toml in each package, the rootdir's baselines folder."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    files = []
    for name in ("foo", "bar"):
        (tmp_path / "packages" / name / "tests").mkdir(parents=True)
        (tmp_path / "packages" / name / "pyproject.toml").write_text("")
        files.append(tmp_path / "packages" / name / "tests" / "test_x.py")
        files[-1].write_text("")
    foo, bar = files
    shared = tmp_path / "baselines"
    assert keys.module_path(foo, shared) == "packages/foo/tests/test_x.py"
    assert keys.module_path(bar, shared) == "packages/bar/tests/test_x.py"
    assert keys.module_path(foo) == keys.module_path(bar) == "tests/test_x.py"  # each package's own root: one key
    assert keys.module_path(foo, Path("baselines")) == "tests/test_x.py"  # a relative folder is each package's own
    assert keys.module_path(foo, tmp_path / "packages" / "foo" / "ci") == "tests/test_x.py"  # inside the package
    assert keys.module_path(foo, Path("/nowhere/baselines")) == "tests/test_x.py"  # no project holds both


def test_a_legacy_entry_is_read_only_where_no_other_file_could_own_it(tmp_path):
    a, b = project(tmp_path)
    legacy = {"test_x": "old"}
    assert keys.find(legacy, a, "test_x", None) == ("test_x", "old")
    assert keys.find(legacy, a, "test_x", None, namesakes=[str(b)]) == (None, None)  # both collected: whose?
    keyed = {"test_x": "old", "tests/a/test_same.py::test_x": "a's"}
    assert keys.find(keyed, a, "test_x", None) == ("tests/a/test_same.py::test_x", "a's")
    assert keys.find(keyed, b, "test_x", None) == (None, None)  # a keyed entry of another file: the old one was a's?
    assert keys.find(legacy, a, "test_y", None) == (None, None)


def test_prune_keeps_collected_cases_and_drops_a_legacy_entry_once_its_case_is_keyed(tmp_path):
    a, b = project(tmp_path)
    stored = {"tests/a/test_same.py::test_x", "tests/b/test_same.py::test_x", "tests/a/test_same.py::test_gone",
              "test_x", "test_y::label", "test_z"}
    kept = keys.kept_on_prune(stored, {str(a): {"test_x", "test_y"}, str(b): {"test_x"}})
    assert kept == {"tests/a/test_same.py::test_x", "tests/b/test_same.py::test_x", "test_y::label"}


def test_the_test_name_of_either_form():
    assert keys.test_name("memtests/test_s5.py::test_fix[amp]::amp") == "test_fix"
    assert keys.test_name("test_fix[amp]::amp") == "test_fix"
    assert keys.is_legacy("test_fix[a.py::b]") and not keys.is_legacy("t.py::test_fix")


def test_a_method_s_name_holds_its_classes_and_keeps_its_parameters_as_they_are():
    assert case_id.test_name("t/test_k.py::test_x") == "test_x"
    assert case_id.test_name("t/test_k.py::TestLoRA::test_train") == "TestLoRA.test_train"
    assert case_id.test_name("t/test_k.py::TestOuter::TestInner::test_x[2-a]") == "TestOuter.TestInner.test_x[2-a]"
    assert case_id.test_name("t/test_k.py::test_x[a::b]") == "test_x[a::b]"  # an id's '::' is the id's
    assert keys.row_case("t/test_k.py::TestFull::test_train::lora", "lora", Path("/r")).key.endswith(
        "::TestFull.test_train::lora")


def test_a_row_s_case_is_read_from_its_file_as_collected_where_its_node_id_is_no_path_from_the_rootdir(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_l.py").write_text("")
    module = str(tmp_path / "tests" / "test_l.py")  # `pytest -c configs/ci.ini tests`: node id 'test_l.py::test_l'
    case = keys.row_case("test_l.py::test_l::new", "new", tmp_path / "configs", module=module)
    assert case.key == "tests/test_l.py::test_l::new"


def test_prune_keeps_a_namesake_s_entries_while_its_file_exists(tmp_path):
    """`pytest tests/a --gpu-budget-update` collects tests/a/test_same.py alone: tests/b/test_same.py's entries share
    its file, and an update of tests/a must not drop them (before, they went, and b's next growth read "new")."""
    a, b = project(tmp_path)
    stored = {"tests/a/test_same.py::test_x", "tests/b/test_same.py::test_x", "tests/a/test_same.py::test_gone"}
    assert keys.kept_on_prune(stored, {str(a): {"test_x"}}) == {"tests/a/test_same.py::test_x",
                                                                 "tests/b/test_same.py::test_x"}
    b.unlink()  # deleted: its entries are stale, and a whole run's update drops them
    assert keys.kept_on_prune(stored, {str(a): {"test_x"}}) == {"tests/a/test_same.py::test_x"}


def test_a_test_file_under_a_folder_with_brackets_has_a_keyed_entry(tmp_path):
    """A '[' in the test file's folder is not a parameter: read as a legacy key, the entry was dropped by every
    whole-suite update (its 'test name' was the path's head), so the case was recorded anew each time."""
    key = "tests/c[1]/test_same.py::test_x[2]::lora"
    assert not keys.is_legacy(key) and case_id.key_path(key) == "tests/c[1]/test_same.py"
    assert keys.test_name(key) == "test_x"
    assert keys.is_legacy("test_fix[a.py::b]") and keys.is_legacy("test_fix[a]") and keys.is_legacy("test_x::lab.py")
    (tmp_path / "pyproject.toml").write_text("")
    module = tmp_path / "tests" / "c[1]" / "test_same.py"
    module.parent.mkdir(parents=True)
    module.write_text("")
    assert keys.kept_on_prune({key}, {str(module): {"test_x[2]"}}) == {key}


def test_prune_drops_the_entries_of_a_parameter_no_longer_collected(tmp_path):
    """The names collected hold their parameters: test_x[old] went with its id, test_x[a::b] is matched whole."""
    a, _ = project(tmp_path)
    stored = {"tests/a/test_same.py::test_x[new]", "tests/a/test_same.py::test_x[new]::lora",
              "tests/a/test_same.py::test_x[old]", "tests/a/test_same.py::test_x[a::b]::lab", "test_x[old]::lora",
              "test_x[a::b]"}
    kept = keys.kept_on_prune(stored, {str(a): {"test_x[new]", "test_x[a::b]"}})
    assert kept == {"tests/a/test_same.py::test_x[new]", "tests/a/test_same.py::test_x[new]::lora",
                    "tests/a/test_same.py::test_x[a::b]::lab", "test_x[a::b]"}


def test_a_file_of_no_module_collected_keeps_the_entries_of_files_that_exist_and_legacy_ones(tmp_path):
    """A renamed module's file: its keyed entries name a file gone; a legacy entry's test cannot be told."""
    project(tmp_path)
    stored = {"tests/b/test_same.py::test_x", "tests/c/test_gone.py::test_x", "test_x"}
    assert keys.kept_on_prune(stored, {}, anchors=[tmp_path]) == {"tests/b/test_same.py::test_x", "test_x"}


def test_a_prune_drops_the_labels_a_finished_test_no_longer_measures(tmp_path):
    """A test that ran to its end names the cases it measured: its other labels (renamed, dropped) and its unlabelled
    entry go; another test's, a test not finished's, and a parameter whose id holds '::' are kept."""
    a, _ = project(tmp_path)
    stored = {f"tests/a/test_same.py::{case}" for case in (
        "test_x::new", "test_x::old", "test_x", "test_x[a::b]::old", "test_y::old", "test_x[2]::old")}
    finished = [keys.case_of("", a, "test_x", "new"), keys.case_of("", a, "test_x[2]", "new")]
    kept = keys.kept_on_prune(stored, {str(a): {"test_x", "test_x[a::b]", "test_y", "test_x[2]"}}, finished=finished)
    assert kept == {"tests/a/test_same.py::test_x::new", "tests/a/test_same.py::test_x[a::b]::old",
                    "tests/a/test_same.py::test_y::old"}
    assert keys.kept_on_prune(stored, {str(a): {"test_x", "test_x[a::b]", "test_y", "test_x[2]"}}) == stored


def test_a_prune_drops_the_legacy_labels_a_finished_test_no_longer_measures(tmp_path):
    """An entry keyed by name alone (recorded before keys held the path) of a label the test no longer measures was
    kept by every whole-suite update; renaming the label back then read that stale figure, where a keyed entry's
    label records afresh. Kept: a label of a test not finished, and one a namesake module's test of that name, which
    could own it, did not finish."""
    a, b = project(tmp_path)
    stored = {"test_x::old", "test_x", "test_y::old", "test_x::new"}
    finished = [keys.case_of("", a, "test_x", "new"), keys.case_of("", a, "test_y", "old")]
    assert keys.kept_on_prune(stored, {str(a): {"test_x", "test_y"}}, finished=finished) == {"test_y::old",
                                                                                          "test_x::new"}
    assert keys.kept_on_prune(stored, {str(a): {"test_x", "test_y"}}) == stored
    assert keys.kept_on_prune(stored, {str(a): {"test_x", "test_y"}, str(b): {"test_x"}}, finished=finished) == stored


def test_two_namesakes_outside_any_project_have_keys_of_their_own(tmp_path, monkeypatch):
    """Files in no project, run from one (`pytest -c pytest.ini ../ext/a ../ext/b`), were keyed by their name alone:
    ext/b/test_same.py was judged against ext/a/test_same.py's entry."""
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "pytest.ini").write_text("[pytest]\n")
    for sub in ("a", "b"):
        (tmp_path / "ext" / sub).mkdir(parents=True)
        (tmp_path / "ext" / sub / "test_same.py").write_text("")
    monkeypatch.chdir(tmp_path / "proj")
    a, b = (tmp_path / "ext" / sub / "test_same.py" for sub in ("a", "b"))
    assert keys.case_key(a, "test_x") == "../ext/a/test_same.py::test_x"
    assert keys.case_key(b, "test_x") == "../ext/b/test_same.py::test_x"
    assert keys.module_path(a, tmp_path / "proj" / "baselines") == "../ext/a/test_same.py"
    stored = {"../ext/a/test_same.py::test_x", "../ext/b/test_same.py::test_x"}
    assert keys.kept_on_prune(stored, {str(a): {"test_x"}}) == stored  # b's file exists: its entry stays


def test_a_key_in_scope_is_of_a_test_a_selection_collected_whole():
    """`unpruned` names only the entries of tests collected whole: a whole file (""), a test named without its ids (its
    ids and labels), a class (its tests); never a namesake test or another file's."""
    scopes = {"t.py": ("test_x", "TestC"), "u.py": ("",)}
    inside = ["t.py::test_x", "t.py::test_x[bs8]", "t.py::test_x[a::b]::lbl", "t.py::test_x::lbl",
              "t.py::TestC.test_y[1]", "u.py::anything[2]"]
    outside = ["t.py::test_x2", "t.py::test_y[bs8]", "t.py::TestCx.test_y", "v.py::test_x", "test_x[bs8]"]
    assert [k for k in inside + outside if keys.in_scope(k, scopes)] == inside


def test_a_project_marked_by_a_pytest_9_or_hidden_ini_file_alone_keys_from_its_root(tmp_path, monkeypatch):
    """A project whose only marker is pytest.toml, .pytest.toml or .pytest.ini (a checkout copied without .git): its
    root was not found, the key was taken from the working folder, and a run from tests/ read 'test_x.py::test_x'
    where one from the root had recorded 'tests/test_x.py::test_x'."""
    for k, ini in enumerate(("pytest.toml", ".pytest.toml", ".pytest.ini")):
        project = tmp_path / f"project{k}"
        (project / "tests").mkdir(parents=True)
        (project / ini).write_text("[pytest]\n")
        module = project / "tests" / "test_x.py"
        module.write_text("")
        for cwd in (project, project / "tests"):
            monkeypatch.chdir(cwd)
            assert keys.case_key(module, "test_x") == "tests/test_x.py::test_x", (ini, cwd)
            assert keys.module_path(module, project / "baselines") == "tests/test_x.py", (ini, cwd)


def test_a_file_in_no_project_is_keyed_from_the_working_folder_s_project_root_from_any_folder_of_it(tmp_path,
                                                                                                  monkeypatch):
    """A test file in no project (a folder beside the checkout, or a symlinked one resolving there), run from a
    project without an ini file: its key and baselines folder were taken from the working folder itself, so a run from
    a subfolder of the project looked up '../../ext/test_x.py::test_x' in sub/baselines and found nothing."""
    (tmp_path / "proj" / "sub").mkdir(parents=True)
    (tmp_path / "proj" / ".git").mkdir()
    (tmp_path / "ext").mkdir()
    module = tmp_path / "ext" / "test_x.py"
    module.write_text("")
    for cwd in (tmp_path / "proj", tmp_path / "proj" / "sub"):
        monkeypatch.chdir(cwd)
        assert keys.case_key(module, "test_x") == "../ext/test_x.py::test_x", cwd
        assert files.folder_for(Path("baselines"), str(module)) == tmp_path / "proj" / "baselines", cwd
