"""Marks the wheel as one for Linux x86-64 (it holds libswiftbert.so and `bert`) but for any
Python 3: the package calls the library through ctypes, so no CPython ABI is involved.
auditwheel repair then turns linux_x86_64 into manylinux_2_35_x86_64."""
from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class NativeFilesHook(BuildHookInterface):
    def initialize(self, version, build_data):
        build_data["pure_python"] = False
        build_data["tag"] = "py3-none-linux_x86_64"
