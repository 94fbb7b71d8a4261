"""Build hook: a wheel of gavel carries the binary and is tagged for its platform.

`make wheel` copies bin/gavel (from `make build`) to src/gavel/bin/gavel
before building. The binary is static (no cgo, no libc), so the wheel is
tagged for every Linux of the binary's architecture, glibc (manylinux
2014) and musl alike; the architecture is read from the binary's ELF
header, never assumed.
"""

from __future__ import annotations

import os
import re
import struct
import subprocess
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface
from hatchling.metadata.plugin.interface import MetadataHookInterface

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


def pep440(version: str) -> str:
    """Returns gavel's version (0.2.0, 0.2.0-dev, 0.2.0-dev+g1a2b3c4) as
    Python spells it: 0.2.0, 0.2.0.dev0, 0.2.0.dev0+g1a2b3c4."""
    m = re.fullmatch(r"(\d+\.\d+\.\d+)(-dev)?(\+[0-9a-z.]+)?", version)
    if not m:
        raise RuntimeError(f"gavel version {version!r}: want X.Y.Z, X.Y.Z-dev or X.Y.Z-dev+gREVISION")
    return m.group(1) + (".dev0" if m.group(2) else "") + (m.group(3) or "")


class CustomMetadataHook(MetadataHookInterface):  # type: ignore[misc]
    """Sets the package's version to the version of the binary it packs."""

    def update(self, metadata: dict[str, Any]) -> None:
        given = os.environ.get("GAVEL_VERSION")
        if given:
            # make dist: the version of this tree's native build, for a
            # binary of another architecture that does not run here.
            metadata["version"] = pep440(given)
            return
        path = os.path.join(self.root, BINARY)
        if not os.path.isfile(path):
            raise RuntimeError(f"{BINARY} is missing: the package's version is the binary's; build it with `make wheel`")
        out = subprocess.run([path, "--version"], capture_output=True, text=True, check=True).stdout
        first = out.splitlines()[0] if out else ""
        if not first.startswith("gavel "):
            raise RuntimeError(f"{BINARY} --version printed {first!r}, not gavel VERSION")
        metadata["version"] = pep440(first.removeprefix("gavel "))
