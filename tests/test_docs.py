"""The documentation: generated pages in step with the code, links that resolve, a short README.

``python -m kgtool.docs`` regenerates every page these tests compare (``docs/development.md``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import kgtool.docs as docs
from kgtool.cli.main import app
from kgtool.offsets import catalog, share_state, tables

ROOT = Path(__file__).resolve().parents[1]
PAGES = docs.pages()
QUICK_START = [
    "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/kgtool spark-audit",
    "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/python -m pytest",
]


@pytest.mark.parametrize("rel", sorted(PAGES))
def test_generated_files_are_up_to_date(rel):
    path = ROOT / rel
    assert path.is_file(), f"{rel} is missing: run python -m kgtool.docs"
    assert path.read_text(encoding="utf-8") == PAGES[rel], f"{rel} is stale: run python -m kgtool.docs"


def test_the_readme_is_at_most_20_kb():
    size = len((ROOT / "README.md").read_bytes())
    assert size <= 20_000, f"README.md is {size:,} bytes"


def test_the_quick_start_is_its_two_commands_and_ci_finds_the_test_command():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Quick start"):]
    block = section[section.index("```console\n") + 11:section.index("```\n", section.index("```console"))]
    assert [ln[2:] for ln in block.splitlines()] == QUICK_START
    # .ci/run: sed -n 's/^\$ \(.*pytest.*\)$/\1/p' README.md | head -1
    found = [m.group(1) for m in re.finditer(r"^\$ (.*pytest.*)$", text, re.M)]
    assert found and found[0] == QUICK_START[1]
    assert r"sed -n 's/^\$ \(.*pytest.*\)$/\1/p' README.md" in (ROOT / ".ci" / "run").read_text()


# ---- one source per rule -----------------------------------------------------------------------

def test_the_replay_reads_its_rule_sets_from_the_catalog():
    assert tables.RULES == catalog.NAMES
    assert set(tables.LAG_RULES) == {r.name for r in catalog.RULES if r.stage == "lag"}
    assert tables.HISTORY_RULES == catalog.HISTORY and tables.COMPARING_RULES == catalog.COMPARING


@pytest.mark.parametrize("rule", catalog.RULES, ids=lambda r: r.name)
def test_each_rule_says_what_every_finding_column_holds(rule):
    named = [c.strip() for cols, _ in (*catalog.COMMON_FIELDS, *rule.fields) for c in cols.split(",")]
    assert sorted(named) == sorted(n for n, _ in tables.FINDINGS), "each column once"
    assert rule.summary and rule.fires and rule.look_alike


def test_every_rule_is_in_help_man_page_readme_and_reference():
    help_text = CliRunner().invoke(app, ["spark-audit", "--help"], env={"COLUMNS": "200"}).stdout
    man = (ROOT / "man" / "kgtool-spark-audit.1").read_text(encoding="utf-8").replace("\\-", "-")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    reference = (ROOT / "docs" / "reference" / "rules.md").read_text(encoding="utf-8")
    for r in catalog.RULES:
        assert f"{r.name} ({r.summary})" in " ".join(help_text.split())
        assert f"\n{r.name}: {r.fires}" in man
        assert f"- `{r.name}`: {r.summary}\n" in readme
        assert f"\n## {r.name}\n" in reference and r.look_alike in reference


def test_every_table_and_column_is_in_the_reference():
    reference = (ROOT / "docs" / "reference" / "tables.md").read_text(encoding="utf-8")
    for name, columns in {**tables.TABLES, "share_partitions": share_state.SHARE_PARTITIONS}.items():
        section = reference[reference.index(f"\n## {name}\n"):]
        section = section[:section.index("\n## ", 5)] if "\n## " in section[5:] else section
        for col, typ in columns:
            assert f"| `{col}` | {typ}" in section, f"{name}.{col}"


# ---- links -------------------------------------------------------------------------------------

def _markdown_files() -> list[Path]:
    return [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "benchmarks" / "RESULTS.md",
            *sorted((ROOT / "docs").rglob("*.md"))]


def _prose(text: str) -> str:
    """The text outside fenced code blocks and inline code."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.M | re.S)
    for m in re.finditer(r"^#{1,6} (.+)$", text, re.M):
        s = slug(m.group(1))
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def test_slugs_are_githubs():
    assert slug("`--until TIME`: the log as it stood at an instant") == "--until-time-the-log-as-it-stood-at-an-instant"
    assert slug("Lag: the second stage") == "lag-the-second-stage"
    assert slug("group_members") == "group_members"


@pytest.mark.parametrize("page", _markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_link_names_a_file_or_anchor_that_does_not_exist(page):
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", _prose(page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no such anchor")
    assert not broken, f"{page.relative_to(ROOT)}: {broken}"
