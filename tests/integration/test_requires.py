"""An optional package that find_spec finds but that cannot be imported: the case is skipped with the reason."""

import os

import pytest

from gpu_budget import MissingDependency, optional_import


def test_a_missing_and_a_broken_package_name_themselves_and_the_install_command(tmp_path, monkeypatch):
    with pytest.raises(MissingDependency, match=r"^no_such_pkg_xyz is not installed \(ModuleNotFoundError: .*\); "
                                                r"install: pip install xyz$"):
        optional_import("no_such_pkg_xyz", "pip install xyz")
    (tmp_path / "broken_pkg_xyz.py").write_text("import missing_dependency_of_it_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(MissingDependency, match="broken_pkg_xyz is installed but cannot be imported "
                                                r"\(ModuleNotFoundError: No module named 'missing_dependency_of_it_xyz'\)"):
        optional_import("broken_pkg_xyz", "pip install xyz")
    assert issubclass(MissingDependency, ImportError)


RUNNERS = '''
from gpu_budget import optional_import


def needs_broken(ctx):
    with ctx.meter.phase("load"):
        optional_import("broken_pkg_xyz", "pip install broken-pkg-xyz")


def prepares_broken(ctx):
    optional_import("broken_pkg_xyz", "pip install broken-pkg-xyz")


def plain_import_error(ctx):
    with ctx.meter.phase("load"):
        import broken_pkg_xyz  # noqa: F401  a runner's own bug stays an error
'''


def test_a_runner_whose_optional_package_fails_to_import_is_skipped_with_the_reason(project, monkeypatch):
    pytester = project('''
        import importlib.util
        pytestmark = pytest.mark.skipif(importlib.util.find_spec("broken_pkg_xyz") is None, reason="absent")

        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_run(gpu_budget):
            gpu_budget.measure(Scenario(name="r", run="optional:needs_broken"))

        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_prepare(gpu_budget):
            gpu_budget.measure(Scenario(name="p", prepare="optional:prepares_broken", run="runners:alloc",
                                        params={"mib": 1}))

        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_probe(gpu_budget):
            gpu_budget.peak(Scenario(name="r", run="optional:needs_broken"))

        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_bug(gpu_budget):
            gpu_budget.measure(Scenario(name="b", run="optional:plain_import_error"))
    ''')
    pytester.makepyfile(optional=RUNNERS, broken_pkg_xyz="import missing_dependency_of_it_xyz\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(pytester.path), os.environ["PYTHONPATH"]]))  # kept behind
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:xdist",
                                           "--gpu-budget", "-rs")
    result.assert_outcomes(skipped=3, failed=1)
    reason = ("*broken_pkg_xyz is installed but cannot be imported (ModuleNotFoundError: No module "
              "named 'missing_dependency_of_it_xyz'); install: pip install broken-pkg-xyz*")
    result.stdout.fnmatch_lines([reason])
    result.stdout.fnmatch_lines(["*test_bug*measured child failed (exception)*No module named*"])
