"""Which build of the engine this CPU runs. A wheel made by `make wheel` carries two: the native
build in _lib/ (for CPUs with every flag of _lib/native-cpu-flags, those of the machine that
built it) and a portable one for any x86-64 CPU in _lib/portable/; the tarball's bin/bert picks
the same way (tools/dist.sh). SWIFTBERT_VARIANT=native or portable forces one. A wheel with the
native build alone (tools/python/build_wheel.sh without a portable folder) always runs it."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Optional

LIB = Path(__file__).resolve().parent / "_lib"


def cpu_flags(cpuinfo: str) -> set:
    """The flags of the first CPU in the text of /proc/cpuinfo."""
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def runs_native(needed: Iterable[str], have: set) -> bool:
    return all(flag in have for flag in needed)


def folder(lib: Path = LIB, forced: Optional[str] = None, cpuinfo: Optional[str] = None) -> Path:
    """The folder of the build to run: `lib` (native) or `lib/portable`."""
    forced = os.environ.get("SWIFTBERT_VARIANT") if forced is None else forced
    portable = lib / "portable"
    if forced not in (None, "", "native", "portable"):
        raise ValueError(f"SWIFTBERT_VARIANT is {forced!r}; it is native or portable")
    if forced == "native":
        return lib
    if forced == "portable":
        if not portable.is_dir():
            raise FileNotFoundError(f"{portable}: this wheel has no portable build (make wheel adds one)")
        return portable
    flags_file = lib / "native-cpu-flags"
    if not portable.is_dir() or not flags_file.exists():
        return lib
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return portable  # nothing to check the native build's needs against
    needed = flags_file.read_text(encoding="utf-8").split()
    return lib if runs_native(needed, cpu_flags(cpuinfo)) else portable
