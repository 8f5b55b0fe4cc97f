"""Which build the wheel runs (`swiftbert._variant`): the native one on a CPU with every flag it
needs, the portable one otherwise, as the tarball's launcher; SWIFTBERT_VARIANT forces one."""
import pytest

from swiftbert import _variant

CPUINFO = "processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_vnni\n\nprocessor\t: 1\nflags\t\t: fpu\n"


def wheel(tmp_path, portable=True, needed="avx2\navx512f\n"):
    lib = tmp_path / "_lib"
    lib.mkdir()
    (lib / "native-cpu-flags").write_text(needed)
    if portable:
        (lib / "portable").mkdir()
    return lib


def test_native_when_the_cpu_has_every_flag(tmp_path):
    lib = wheel(tmp_path)
    assert _variant.folder(lib, forced="", cpuinfo=CPUINFO) == lib


def test_portable_when_a_flag_is_missing(tmp_path):
    lib = wheel(tmp_path, needed="avx2\navx512f\namx_tile\n")
    assert _variant.folder(lib, forced="", cpuinfo=CPUINFO) == lib / "portable"
    assert _variant.folder(lib, forced="", cpuinfo="no flags line") == lib / "portable"


def test_a_wheel_without_a_portable_build_runs_the_native_one(tmp_path):
    lib = wheel(tmp_path, portable=False, needed="amx_tile\n")
    assert _variant.folder(lib, forced="", cpuinfo=CPUINFO) == lib
    with pytest.raises(FileNotFoundError, match="no portable build"):
        _variant.folder(lib, forced="portable", cpuinfo=CPUINFO)


def test_swiftbert_variant_forces_one(tmp_path):
    lib = wheel(tmp_path, needed="amx_tile\n")
    assert _variant.folder(lib, forced="native", cpuinfo=CPUINFO) == lib
    (tmp_path / "b").mkdir()
    lib2 = wheel(tmp_path / "b")
    assert _variant.folder(lib2, forced="portable", cpuinfo=CPUINFO) == lib2 / "portable"
    with pytest.raises(ValueError, match="native or portable"):
        _variant.folder(lib, forced="fast", cpuinfo=CPUINFO)
