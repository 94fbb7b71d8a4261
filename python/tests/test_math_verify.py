"""The math check against Hugging Face's Math-Verify, on testdata/math/corpus.jsonl.

Each corpus line is {"id", "gold", "answer", "equal", "form"}: a gold answer
as datasets store it, a model's answer, whether the two are truly equal, and
the kind of answer. gavel grades the corpus with examples/math/math.yaml;
Math-Verify judges it as its users call it, verify(parse(gold), parse(answer))
with the default settings, a gold that is bare LaTeX (no ``$`` other than
an escaped ``\\$``, no ``\\boxed``) wrapped in ``$...$`` first.

Every pair the two judge differently must be listed, with both verdicts and
the truth, in the table under "## Where gavel and Math-Verify disagree" of
docs/math.md, and every listed pair must really be judged differently. Over
the corpus gavel must be right (against "equal") at least as often as
Math-Verify.

Without Math-Verify installed (pip install math-verify) the tests are
skipped, unless GAVEL_REQUIRE_MATH_VERIFY=1, which makes that a failure.
Math-Verify's timeouts use signal.alarm, so it runs on the main thread.
"""

from __future__ import annotations

import importlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import gavel

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "testdata" / "math" / "corpus.jsonl"
SPEC = ROOT / "examples" / "math" / "math.yaml"
DOCS_PAGE = ROOT / "docs" / "math.md"
HEADING = "## Where gavel and Math-Verify disagree"
COLUMNS = ["id", "gold", "answer", "truth", "gavel", "Math-Verify", "why"]

TRUE_WORDS = {"true", "pass", "yes", "equal", "✓", "✅"}
FALSE_WORDS = {"false", "fail", "no", "not equal", "unequal", "✗", "❌"}


def _import_math_verify() -> ModuleType:
    try:
        return importlib.import_module("math_verify")
    except ImportError:
        if os.environ.get("GAVEL_REQUIRE_MATH_VERIFY") == "1":
            raise
        pytest.skip("math_verify is not installed (pip install math-verify)", allow_module_level=True)


math_verify = _import_math_verify()


@dataclass(frozen=True)
class Pair:
    """One line of the corpus."""

    id: str
    gold: str
    answer: str
    equal: bool
    form: str
    gold_unparseable: bool = False
    """Set in the corpus for a gold gavel may refuse (its row then has status error)."""


@dataclass(frozen=True)
class Listed:
    """One row of the disagreement table of docs/math.md."""

    line: int
    id: str
    truth: bool
    gavel: bool
    math_verify: bool


def load_corpus(path: Path) -> list[Pair]:
    """Reads the corpus, checking each line's fields and that ids are unique."""
    pairs: list[Pair] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        where = f"{path.name}:{n}"
        for key, kind in (("id", str), ("gold", str), ("answer", str), ("equal", bool), ("form", str)):
            assert isinstance(row.get(key), kind), f"{where}: {key!r} must be a {kind.__name__}: {row.get(key)!r}"
        pairs.append(
            Pair(row["id"], row["gold"], row["answer"], row["equal"], row["form"], bool(row.get("gold_unparseable", False)))
        )
    ids = [p.id for p in pairs]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    assert not dupes, f"{path.name}: duplicate ids {dupes}"
    assert pairs, f"{path.name}: no pairs"
    return pairs


def wrap_gold(gold: str) -> str:
    """A gold that is bare LaTeX (no $, no \\boxed) in $...$, as Math-Verify's users pass it.
    An escaped \\$ (a dollar sign, as in \\$18) is not a math delimiter."""
    if re.search(r"(?<!\\)\$", gold) or "\\boxed" in gold:
        return gold
    return f"${gold}$"


def math_verify_verdict(gold: str, answer: str) -> tuple[bool, str | None]:
    """Math-Verify's verdict with its default settings, and the exception
    it raised (then the verdict is False), if any."""
    try:
        return bool(math_verify.verify(math_verify.parse(wrap_gold(gold)), math_verify.parse(answer))), None
    except Exception as e:  # Math-Verify's own failures count as "not equal"
        return False, f"{type(e).__name__}: {e}"


def math_verify_verdicts(pairs: list[Pair]) -> tuple[dict[str, bool], dict[str, str]]:
    """Math-Verify's verdict on each pair by id, and the exceptions by id."""
    verdicts: dict[str, bool] = {}
    raised: dict[str, str] = {}
    for p in pairs:
        verdicts[p.id], err = math_verify_verdict(p.gold, p.answer)
        if err is not None:
            raised[p.id] = err
    return verdicts, raised


def gavel_verdicts(pairs: list[Pair], spec: Path) -> tuple[dict[str, bool], dict[str, str]]:
    """gavel's verdict on each pair by id (its one check passed or failed),
    and, by id, why a row has no verdict (status error, or no single check)."""
    rows = [{"rollout_id": p.id, "task_id": "math", "output": p.answer, "answer": p.gold} for p in pairs]
    res = gavel.grade(rows, spec=str(spec))
    problems: dict[str, str] = {}
    for r in res.rewards.to_pylist():
        if r["status"] == "error":
            problems[r["rollout_id"]] = f"row status error: {r['error_kind']}: {r['error']}"
    checks: dict[str, list[dict[str, Any]]] = {}
    for c in res.checks.to_pylist():
        checks.setdefault(c["rollout_id"], []).append(c)
    verdicts: dict[str, bool] = {}
    for p in pairs:
        if p.id in problems:
            continue
        got = checks.get(p.id, [])
        if len(got) != 1:
            problems[p.id] = f"want one check, got {[c['check_id'] for c in got]}"
            continue
        c = got[0]
        if c["status"] in ("pass", "fail"):
            verdicts[p.id] = c["status"] == "pass"
        else:
            problems[p.id] = f"check {c['check_id']} status {c['status']}: {c['detail']} (actual {c['actual']!r}, expected {c['expected']!r})"
    return verdicts, problems


def _verdict_word(cell: str, where: str) -> bool:
    word = cell.strip().strip("`*_").strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise AssertionError(f"{where}: {cell.strip()!r} is not a verdict (write true or false)")


def _cells(line: str) -> list[str]:
    """The cells of a markdown table line; a | inside a cell is written \\|."""
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [c.strip() for c in re.split(r"(?<!\\)\|", inner)]


def listed_disagreements(page: Path) -> list[Listed]:
    """The rows of the table under HEADING in page."""
    lines = page.read_text(encoding="utf-8").splitlines()
    assert HEADING in lines, f"{page.name}: no heading {HEADING!r}"
    i = lines.index(HEADING) + 1
    while i < len(lines) and not lines[i].lstrip().startswith("|"):
        assert not lines[i].startswith("#"), f"{page.name}: no table under {HEADING!r}"
        i += 1
    assert i < len(lines), f"{page.name}: no table under {HEADING!r}"
    header = _cells(lines[i])
    assert header == COLUMNS, f"{page.name}:{i + 1}: table columns {header}, want {COLUMNS}"
    assert i + 1 < len(lines) and set(lines[i + 1].replace("|", "").strip()) <= set("-: "), (
        f"{page.name}:{i + 2}: want the table's --- line"
    )
    listed: list[Listed] = []
    for n in range(i + 2, len(lines)):
        line = lines[n]
        if not line.lstrip().startswith("|"):
            break
        where = f"{page.name}:{n + 1}"
        cells = _cells(line)
        assert len(cells) == len(COLUMNS), f"{where}: {len(cells)} cells, want {len(COLUMNS)} (write a | inside a cell as \\|)"
        m = re.fullmatch(r"`([^`]+)`", cells[0])
        assert m, f"{where}: the id {cells[0]!r} must be in backticks"
        listed.append(
            Listed(
                n + 1,
                m.group(1).replace("\\|", "|"),
                _verdict_word(cells[3], f"{where} truth"),
                _verdict_word(cells[4], f"{where} gavel"),
                _verdict_word(cells[5], f"{where} Math-Verify"),
            )
        )
    return listed


def _code(s: str, limit: int = 80) -> str:
    """s as a one-line markdown code span for a table cell."""
    s = " ".join(s.split())
    if len(s) > limit:
        s = "…" + s[-(limit - 1) :]
    s = s.replace("|", "\\|")
    fence = "``" if "`" in s else "`"
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def table_row(p: Pair, gavel_says: bool, mv_says: bool) -> str:
    """A row of the disagreement table for p, its why left to fill in."""
    words = {True: "true", False: "false"}
    pid = p.id.replace("|", "\\|")
    return f"| `{pid}` | {_code(p.gold)} | {_code(p.answer)} | {words[p.equal]} | {words[gavel_says]} | {words[mv_says]} | |"


@pytest.fixture(scope="module")
def corpus() -> list[Pair]:
    if not CORPUS.exists():
        pytest.fail(f"no corpus at {CORPUS}")
    return load_corpus(CORPUS)


@pytest.fixture(scope="module")
def mv(corpus: list[Pair]) -> dict[str, bool]:
    verdicts, raised = math_verify_verdicts(corpus)
    for pid, err in sorted(raised.items()):
        print(f"Math-Verify raised on {pid} (counted as not equal): {err}")
    return verdicts


@pytest.fixture(scope="module")
def gv(corpus: list[Pair]) -> tuple[dict[str, bool], dict[str, str]]:
    return gavel_verdicts(corpus, SPEC)


def test_gavel_judges_every_pair(corpus: list[Pair], gv: tuple[dict[str, bool], dict[str, str]]) -> None:
    _, problems = gv
    allowed = {p.id for p in corpus if p.gold_unparseable}
    bad = {pid: why for pid, why in problems.items() if pid not in allowed or "status error" not in why}
    assert not bad, "gavel gave no verdict on:\n" + "\n".join(f"  {pid}: {why}" for pid, why in sorted(bad.items()))


def test_disagreements_are_documented(
    corpus: list[Pair], mv: dict[str, bool], gv: tuple[dict[str, bool], dict[str, str]]
) -> None:
    verdicts, _ = gv
    by_id = {p.id: p for p in corpus}
    differ = {pid for pid, g in verdicts.items() if g != mv[pid]}
    listed = listed_disagreements(DOCS_PAGE)
    errors: list[str] = []
    seen: set[str] = set()
    for row in listed:
        where = f"{DOCS_PAGE.name}:{row.line}: {row.id}"
        if row.id in seen:
            errors.append(f"{where}: listed twice")
        seen.add(row.id)
        p = by_id.get(row.id)
        if p is None:
            errors.append(f"{where}: not in the corpus")
            continue
        if row.id not in verdicts:
            errors.append(f"{where}: gavel gave no verdict")
            continue
        if row.id not in differ:
            errors.append(f"{where}: gavel and Math-Verify agree ({verdicts[row.id]}), remove the row")
            continue
        for name, said, want in (
            ("truth", row.truth, p.equal),
            ("gavel", row.gavel, verdicts[row.id]),
            ("Math-Verify", row.math_verify, mv[row.id]),
        ):
            if said != want:
                errors.append(f"{where}: {name} is listed as {str(said).lower()}, is {str(want).lower()}")
    missing = sorted(differ - seen)
    if missing:
        print(f"\n{len(missing)} disagreements not in {DOCS_PAGE.name} (paste under {HEADING!r}):")
        for pid in missing:
            print(table_row(by_id[pid], verdicts[pid], mv[pid]))
        errors.append(f"{len(missing)} disagreements not listed: {', '.join(missing)}")
    assert not errors, "\n".join(errors)


def test_gavel_is_right_as_often_as_math_verify(
    corpus: list[Pair], mv: dict[str, bool], gv: tuple[dict[str, bool], dict[str, str]]
) -> None:
    verdicts, _ = gv
    gavel_right = sum(verdicts.get(p.id) == p.equal for p in corpus)
    mv_right = sum(mv[p.id] == p.equal for p in corpus)
    print(f"\nright against the corpus's equal, of {len(corpus)}: gavel {gavel_right}, Math-Verify {mv_right}")
    for p in corpus:
        if verdicts.get(p.id) != p.equal:
            print(f"gavel wrong on {p.id} ({p.form}): says {verdicts.get(p.id)}, truth {p.equal}")
    assert gavel_right >= mv_right, f"gavel right on {gavel_right} of {len(corpus)}, Math-Verify on {mv_right}"
