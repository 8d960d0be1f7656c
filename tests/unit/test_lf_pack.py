"""benchmarks/lf_pack.py makes S3's LLaMA-Factory wheels fit one device call without changing what runs: a trimmed
wheel keeps every file but other runtimes' native libraries (and its RECORD says so), and the packed tar gives back
the same wheels, each entry byte for byte."""

import tarfile
import zipfile

import pytest

from benchmarks.lf_pack import kept, pack, trim

LIBS = ("libtool_cpu.so", "libtool_cuda118.so", "libtool_cuda128.so", "libtool_cuda130.so", "libtool_cuda132.so",
        "libtool_rocm64.so", "libtool_xpu2026.so")


def a_wheel(path, libs=LIBS):
    entries = {"tool/__init__.py": b"x = 1\n", **{f"tool/{lib}": lib.encode() * 100 for lib in libs}}
    record = "".join(f"{name},sha256=x,{len(data)}\n" for name, data in entries.items()) + "tool-1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in {**entries, "tool-1.0.dist-info/RECORD": record.encode()}.items():
            zf.writestr(name, data)
    return path


def test_trim_keeps_the_named_runtimes_libraries_and_everything_else(tmp_path):
    wheel = a_wheel(tmp_path / "tool-1.0-py3-none-any.whl")
    dropped = trim(wheel, ("cpu", "cuda13"))
    assert sorted(dropped) == ["tool/libtool_cuda118.so", "tool/libtool_cuda128.so", "tool/libtool_rocm64.so",
                               "tool/libtool_xpu2026.so"]
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        record = zf.read("tool-1.0.dist-info/RECORD").decode()
    assert names == {"tool/__init__.py", "tool/libtool_cpu.so", "tool/libtool_cuda130.so", "tool/libtool_cuda132.so",
                     "tool-1.0.dist-info/RECORD"}
    assert {line.split(",")[0] for line in record.splitlines()} == names  # RECORD lists what the wheel holds


def test_a_trim_that_would_keep_no_library_is_refused(tmp_path):
    wheel = a_wheel(tmp_path / "tool-1.0-py3-none-any.whl", libs=("libtool_cuda118.so",))
    with pytest.raises(ValueError, match="keep none of its libraries"):
        trim(wheel, ("cuda13",))


def test_a_name_that_is_not_a_runtime_library_stays():
    assert kept("tool/__init__.py", ("cpu",)) and kept("tool/libtool_cuda118.so", ("cuda11",))
    assert not kept("tool/libtool_cuda118.so", ("cuda13",))


def test_the_pack_gives_back_the_same_wheels_stored(tmp_path):
    folder = tmp_path / "kit"
    (folder / "overlay").mkdir(parents=True)
    wheel = a_wheel(folder / "overlay" / "tool-1.0-py3-none-any.whl")
    (folder / "PYTHON").write_text("3.12\n")
    size = pack(folder, tmp_path / "lf.tar.xz")
    assert size == (tmp_path / "lf.tar.xz").stat().st_size
    with tarfile.open(tmp_path / "lf.tar.xz") as tar:
        tar.extractall(tmp_path / "out", filter="data")
    assert (tmp_path / "out" / "PYTHON").read_text() == "3.12\n"
    with zipfile.ZipFile(wheel) as before, zipfile.ZipFile(tmp_path / "out" / "overlay" / wheel.name) as after:
        assert [(i.filename, before.read(i)) for i in before.infolist()] == \
            [(i.filename, after.read(i)) for i in after.infolist()]
        assert {i.compress_type for i in after.infolist()} == {zipfile.ZIP_STORED}  # xz compresses across them
