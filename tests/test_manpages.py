"""Man pages are generated from the CLI and must stay in step with --help."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
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


# --- the pages as man(1) shows them ------------------------------------------------------------

def _renderer() -> list[str] | None:
    """The command that formats a page as plain text: man -l (man-db), else nroff."""
    if shutil.which("man"):
        return ["man", "-l", "-P", "cat"]
    if shutil.which("nroff"):
        return ["nroff", "-man"]
    return None


def render_page(path: Path) -> str:
    cmd = _renderer()
    if cmd is None:
        pytest.skip("neither man(1) nor nroff(1) is installed (Debian: apt-get install man-db groff-base)")
    env = {**os.environ, "LC_ALL": "C", "MANWIDTH": "200", "MAN_KEEP_FORMATTING": ""}
    env.pop("MANPAGER", None)
    env.pop("PAGER", None)
    out = subprocess.run([*cmd, str(path)], capture_output=True, env=env, timeout=60, check=True).stdout
    # nroff keeps bold as overstrikes (X\bX); man strips them when writing to a pipe.
    return re.sub(r".\x08", "", out.decode("ascii", "replace"))


def _examples(name: str) -> list[str]:
    import importlib

    from kgtool.cli.main import SUBCOMMANDS

    module = importlib.import_module(SUBCOMMANDS[name][0])
    text = getattr(module, "MAN_SECTIONS", {}).get("EXAMPLES", "")
    return [ln.strip() for ln in text.splitlines() if ln.strip()]


@pytest.mark.parametrize("fname", sorted(manpage.generate()))
def test_rendered_page_has_each_section_once(fname):
    shown = render_page(MAN / fname)
    headings = [ln for ln in shown.splitlines() if re.fullmatch(r"[A-Z][A-Z ]+", ln)]
    assert len(headings) == len(set(headings)), f"{fname}: a section twice: {headings}"
    for required in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "SEE ALSO"):
        assert required in headings, f"{fname}: no {required} section: {headings}"


@pytest.mark.parametrize("name", COMMANDS)
def test_rendered_examples_are_one_per_line(name):
    examples = _examples(name)
    assert examples, f"kgtool-{name}.1 has no EXAMPLES"
    shown = [ln.strip() for ln in render_page(MAN / f"kgtool-{name}.1").splitlines()]
    start = shown.index("EXAMPLES")
    for example in examples:
        assert example in shown[start:], f"kgtool-{name}.1: example not on a line of its own: {example!r}"


def test_rendered_synopsis_matches_the_usage_line():
    for name in COMMANDS:
        usage = CliRunner().invoke(app, [name, "--help"]).stdout.splitlines()[0]
        shown = render_page(MAN / f"kgtool-{name}.1").splitlines()
        synopsis = shown[shown.index("SYNOPSIS") + 1].strip()
        assert usage == f"Usage: {synopsis}", (usage, synopsis)


def test_a_command_states_its_own_exit_status_without_a_second_section(monkeypatch):
    from kgtool.cli import assign

    page = manpage.generate()["kgtool-assign.1"]
    assert page.count(".SH EXIT STATUS") == 1
    assert "withheld by cooperative" in page  # assign's MAN_EXIT_STATUS replaces code 1's text
    monkeypatch.setitem(assign.MAN_SECTIONS, "EXIT STATUS", "0 ok")
    with pytest.raises(ValueError, match="MAN_EXIT_STATUS"):
        manpage.generate()


@pytest.mark.slow
def test_pip_install_puts_the_pages_where_man_finds_them(tmp_path):
    """A wheel carries the pages as data (share/man/man1); installed under a prefix, man(1)
    finds them from that prefix's bin on PATH, as from a virtual environment."""
    if not shutil.which("man"):
        pytest.skip("man(1) is not installed (Debian: apt-get install man-db)")
    repo = MAN.parent
    src = tmp_path / "src"
    shutil.copytree(repo, src, ignore=shutil.ignore_patterns(".git", "build", ".venv", "*.so", "__pycache__",
                                                             "*.egg-info", ".pytest_cache"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    env = {**os.environ, "KGTOOL_PURE_PYTHON": "1"}  # no C compiler needed for this
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(tmp_path / "dist"), str(src)],
                   check=True, env=env, timeout=600, capture_output=True)
    (wheel,) = (tmp_path / "dist").glob("kgtool-*.whl")
    with zipfile.ZipFile(wheel) as z:
        pages = sorted(Path(n).name for n in z.namelist() if "/data/share/man/man1/" in n)
    assert pages == sorted(manpage.generate())
    prefix = tmp_path / "venv"
    # --ignore-installed: without it pip uninstalls the kgtool of the environment running the
    # tests (an editable install's entry points went) before it installs into the prefix
    subprocess.run([*pip, "install", "--no-deps", "--ignore-installed", "--prefix", str(prefix), str(wheel)],
                   check=True, timeout=600, capture_output=True)
    env = {k: v for k, v in os.environ.items() if k not in ("MANPATH",)}
    env["PATH"] = f"{prefix / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin"
    found = subprocess.run(["man", "-w", "kgtool", "kgtool-decode-batch"], capture_output=True, text=True,
                           env=env, timeout=60)
    assert found.returncode == 0, found.stderr
    assert found.stdout.split() == [str(prefix / "share/man/man1/kgtool.1"),
                                    str(prefix / "share/man/man1/kgtool-decode-batch.1")]
