"""against/stored.py: the test file of a node id that is no path from the rootdir, found under the paths named."""

from gpu_budget.against.stored import module_of


def test_a_node_ids_file_is_found_under_the_one_named_path_that_holds_it(tmp_path):
    for sub in ("configs", "tests/a", "tests/b"):
        (tmp_path / sub).mkdir(parents=True)
    for sub in ("tests/a", "tests/b"):
        (tmp_path / sub / "test_l.py").write_text("")
    a, b = tmp_path / "tests" / "a", tmp_path / "tests" / "b"
    assert module_of("test_l.py", tmp_path / "configs", [a]) == str(a / "test_l.py")  # pytest -c configs/ci.ini tests/a
    assert module_of("a/test_l.py", tmp_path / "configs", [tmp_path / "tests"]) == str(a / "test_l.py")
    assert module_of("", tmp_path / "configs", [b / "test_l.py"]) == str(b / "test_l.py")  # a file named: '::test_x'
    assert module_of("test_l.py", tmp_path / "configs", [a, b]) is None  # two namesakes: one node id, no telling
    assert module_of("test_l.py", a, [b]) is None  # under the rootdir: its node id is its path
