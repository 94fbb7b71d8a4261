"""Build hook: a wheel of gavel carries the binary and is tagged for its platform.

`make wheel` copies bin/gavel (from `make build`) to src/gavel/bin/gavel
before building. The binary is static (no cgo, no libc), so the wheel is
tagged for every Linux of the binary's architecture, glibc (manylinux
2014) and musl alike; the architecture is read from the binary's ELF
header, never assumed.
"""

from __future__ import annotations

import os
import struct
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

BINARY = os.path.join("src", "gavel", "bin", "gavel")

# ELF e_machine values and the platform tags' architecture names.
ARCHES = {62: "x86_64", 183: "aarch64"}


def elf_arch(path: str) -> str:
    """Returns the architecture of the ELF executable at path."""
    with open(path, "rb") as f:
        head = f.read(20)
    if len(head) < 20 or head[:4] != b"\x7fELF":
        raise RuntimeError(f"{path}: not an ELF executable; build it with `make build` on Linux")
    order = "<" if head[5] == 1 else ">"
    (machine,) = struct.unpack(order + "H", head[18:20])
    if machine not in ARCHES:
        raise RuntimeError(f"{path}: ELF machine {machine} has no wheel tag here")
    return ARCHES[machine]


class CustomBuildHook(BuildHookInterface):  # type: ignore[misc]
    """Marks the wheel as a platform wheel tagged for the binary's architecture."""

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version == "editable":
            return
        path = os.path.join(self.root, BINARY)
        if not os.path.isfile(path):
            raise RuntimeError(
                f"{BINARY} is missing: build the wheel with `make wheel` at the repository's root, "
                "which builds bin/gavel and copies it here"
            )
        if not os.access(path, os.X_OK):
            raise RuntimeError(f"{BINARY} is not executable")
        arch = elf_arch(path)
        build_data["pure_python"] = False
        build_data["tag"] = f"py3-none-manylinux_2_17_{arch}.manylinux2014_{arch}.musllinux_1_1_{arch}"
