"""Man pages are generated from the CLI and must stay in step with --help."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgtool.cli import manpage
from kgtool.cli.main import app, subcommands

MAN = Path(__file__).resolve().parents[1] / "man"
COMMANDS = sorted(subcommands())


def test_every_command_has_a_page():
    assert COMMANDS, "no subcommands registered"
    for name in COMMANDS:
        assert (MAN / f"kgtool-{name}.1").is_file(), f"man/kgtool-{name}.1 is missing"
    assert (MAN / "kgtool.1").is_file()


@pytest.mark.parametrize("fname", sorted(manpage.generate()))
def test_committed_pages_are_up_to_date(fname):
    expected = manpage.generate()[fname]
    committed = (MAN / fname).read_text(encoding="utf-8")
    assert committed == expected, f"man/{fname} is stale: run python -m kgtool.cli.manpage"


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_in_help_is_in_the_man_page(name):
    result = CliRunner().invoke(app, [name, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    options = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", result.stdout))
    assert "--help" in options
    page = (MAN / f"kgtool-{name}.1").read_text(encoding="utf-8").replace("\\-", "-")
    missing = sorted(o for o in options if o not in page)
    assert not missing, f"options in --help but not in man/kgtool-{name}.1: {missing}"


def test_root_page_lists_every_command():
    page = (MAN / "kgtool.1").read_text(encoding="utf-8").replace("\\-", "-")
    for name in COMMANDS:
        assert name in page
