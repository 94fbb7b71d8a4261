"""The options of gavel.grade against the flags of the binary."""

from __future__ import annotations

import datetime
import importlib.metadata
import re
import subprocess
from pathlib import Path

import pytest

import gavel
from gavel._options import KINDS, MANAGED_FLAGS, Kind, flag_name, option_args


def help_flags() -> dict[str, tuple[str, str]]:
    """Returns each flag of `gavel grade --help`: its argument name ("" for a boolean) and usage."""
    out = subprocess.run([gavel.binary(), "grade", "--help"], capture_output=True, text=True, check=True).stdout
    flags: dict[str, tuple[str, str]] = {}
    name = ""
    for line in out.splitlines():
        m = re.match(r"^  --([a-z0-9-]+)(?: (\S+))?$", line)
        if m:
            name = m.group(1)
            flags[name] = (m.group(2) or "", "")
        elif name and line.startswith("    \t"):
            arg, usage = flags[name]
            flags[name] = (arg, usage + line.strip())
        elif not line.strip() or not line.startswith(" "):
            name = ""
    assert len(flags) > 20, f"parsed too few flags from gavel grade --help:\n{out}"
    return flags


def test_every_flag_is_an_option() -> None:
    flags = set(help_flags())
    options = {flag_name(k) for k in KINDS}
    unknown = sorted(flags - options - MANAGED_FLAGS)
    assert not unknown, f"flags of gavel grade without an option in GradeOptions: {unknown}"
    stale = sorted(options - flags)
    assert not stale, f"options of GradeOptions that gavel grade does not have: {stale}"


def test_kinds_match_help() -> None:
    for flag, (arg, usage) in help_flags().items():
        if flag in MANAGED_FLAGS:
            continue
        key = next(k for k in KINDS if flag_name(k) == flag)
        kind = KINDS[key]
        assert (arg == "") == (kind is Kind.FLAG), f"--{flag}: boolean in the binary: {arg == ''}, option kind {kind}"
        repeatable = "repeat" in usage
        assert repeatable == (kind in (Kind.REPEATED, Kind.REPEATED_PAIRS)), f"--{flag}: repeatable: {repeatable}, option kind {kind}"


@pytest.mark.parametrize(
    ("options", "want"),
    [
        ({"spec": "a.yaml"}, ["--spec", "a.yaml"]),
        ({"spec": ["a.yaml", Path("specs")]}, ["--spec", "a.yaml", "--spec", "specs"]),
        ({"keep": ["model", "run_id"]}, ["--keep", "model,run_id"]),
        ({"keep": "model"}, ["--keep", "model"]),
        ({"map": {"final_state": "world_after", "output": "answer"}}, ["--map", "final_state=world_after,output=answer"]),
        ({"map": "output=answer"}, ["--map", "output=answer"]),
        ({"set": {"model": "m1", "run": "7"}}, ["--set", "model=m1", "--set", "run=7"]),
        ({"judge_url_for": ["a=http://x/v1"]}, ["--judge-url-for", "a=http://x/v1"]),
        ({"judge_model": ["a", "b"]}, ["--judge-model", "a", "--judge-model", "b"]),
        ({"quiet": True, "resume": False}, ["--quiet"]),
        ({"workers": 2, "judge_threshold": 0.5}, ["--workers", "2", "--judge-threshold", "0.5"]),
        ({"timeout": 1.5}, ["--timeout", "1.5s"]),
        ({"timeout": 3}, ["--timeout", "3s"]),
        ({"judge_timeout": datetime.timedelta(minutes=2)}, ["--judge-timeout", "120.0s"]),
        ({"timeout": datetime.timedelta(microseconds=10)}, ["--timeout", "0.00001s"]),
        ({"timeout": 2.5e-08}, ["--timeout", "0.000000025s"]),
        ({"timeout": "90ms"}, ["--timeout", "90ms"]),
        ({"from_": "tau-bench"}, ["--from", "tau-bench"]),
        ({"tasks": None}, []),
    ],
)
def test_option_args(options: dict[str, object], want: list[str]) -> None:
    assert option_args(options) == want


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"wokers": 2}, "unknown option wokers= (did you mean workers=?)"),
        ({"checks_out": "x"}, "gavel sets --checks-out itself"),
        ({"quiet": "yes"}, "quiet='yes': want True or False"),
        ({"workers": True}, "want a value, not a boolean"),
        ({"tasks": object()}, "want a string, a number or a path"),
    ],
)
def test_option_args_refuses(options: dict[str, object], error: str) -> None:
    with pytest.raises(TypeError) as e:
        option_args(options)
    assert error in str(e.value)


def test_version_matches_binary() -> None:
    """The package's version is its binary's, as Python spells it
    (0.2.0-dev+g1a2b3c4 is 0.2.0.dev0+g1a2b3c4)."""
    out = subprocess.run([gavel.binary(), "--version"], capture_output=True, text=True, check=True).stdout
    binary = out.splitlines()[0].removeprefix("gavel ")
    assert re.fullmatch(r"\d+\.\d+\.\d+(-dev(\+g[0-9a-f]{7}(\.dirty)?)?)?", binary), binary
    assert gavel.__version__ == binary.replace("-dev", ".dev0")
    assert importlib.metadata.version("gavel") == gavel.__version__
