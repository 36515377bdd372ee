"""The README's code blocks run as written, in order, in an empty folder.

Every ```bash and ```python block of README.md is run in the order it appears: shell
blocks with ``bash -e`` and a ``riskset`` command on PATH (this checkout's
``python -m riskset.cli``), Python blocks in one shared namespace (a later block uses
the ``data`` an earlier one made). A block that cannot run here is marked by the line
before it, ``<!-- readme-test: skip (REASON) -->``; those show as skipped tests with
their reason (``pytest -rs``).
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import riskset

from helpers import HANG_SECONDS

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.MULTILINE | re.DOTALL)
SKIP = re.compile(r"<!-- readme-test: skip \((.+)\) -->\s*$")


def readme_blocks(text: str) -> list[dict]:
    """The bash and python blocks of ``text`` in order: language, code, line, skip reason (or None)."""
    blocks = []
    for match in FENCE.finditer(text):
        language, code = match.groups()
        if language not in ("bash", "python"):
            continue
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = SKIP.search(before)
        blocks.append({"language": language, "code": code, "line": text.count("\n", 0, match.start()) + 1,
                       "skip": skip.group(1) if skip else None})
    return blocks


BLOCKS = readme_blocks(README.read_text())


def riskset_on_path(folder: Path) -> dict:
    """Environment whose PATH starts with ``folder``, holding a ``riskset`` that runs this checkout's CLI."""
    shim = folder / "riskset"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m riskset.cli "$@"\n')
    shim.chmod(0o755)
    src = str(ROOT / "src")
    return dict(os.environ, PATH=f"{folder}{os.pathsep}{os.environ['PATH']}", MPLBACKEND="Agg",
                PYTHONPATH=os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p))


def run_block(block: dict, namespace: dict, env: dict, cwd: Path) -> None:
    """Run one block; fail with the README line and the block's output if it fails."""
    where = f"README.md line {block['line']}"
    if block["language"] == "python":
        exec(compile(block["code"], where, "exec"), namespace)  # noqa: S102 - the README's own code
        return
    done = subprocess.run(["bash", "-e", "-c", block["code"]], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=HANG_SECONDS)
    assert done.returncode == 0, f"{where}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"


@pytest.mark.filterwarnings("ignore::riskset.exceptions.ConvergenceWarning")
def test_readme_blocks_run_in_order(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    env = riskset_on_path(bin_dir)
    namespace = {"__name__": "__readme__"}
    ran = [b for b in BLOCKS if not b["skip"]]
    assert len(ran) >= 6, "the README lost its runnable examples"
    for block in ran:
        run_block(block, namespace, env, work)
    for made in ("cohort.duckdb", "fit.json", "cv.png", "cohort/outcomes.parquet", "plots", "study/case.json",
                 "result.json", "demo", "sccs_study/time_effects.png", "sccs_cli/estimates.csv"):
        assert (work / made).exists(), f"the README's commands did not make {made}"


@pytest.mark.parametrize("block", [b for b in BLOCKS if b["skip"]], ids=lambda b: f"line{b['line']}")
def test_skipped_readme_blocks_say_why(block):
    assert len(block["skip"]) > 10, f"README.md line {block['line']}: say why the block cannot run in the tests"
    pytest.skip(f"README.md line {block['line']}: {block['skip']}")


def test_cross_validation_needs_no_starting_strength():
    """README: ``riskset.Laplace()`` with no gamma is chosen by cross-validation; ``fit`` asks for one."""
    data = riskset.simulate(n=600, p=8, model="logistic", seed=2)
    cv = riskset.cross_validate(data, "logistic", riskset.Laplace(), n_folds=3, n_grid=3, progress=False)
    assert cv.prior.kind == "laplace" and cv.prior.gamma > 0
    with pytest.raises(riskset.InputError, match="no strength: give gamma=... or variance="):
        riskset.fit(data, "logistic", riskset.Laplace())


def test_readme_links_stay_inside_the_repository():
    links = re.findall(r"\]\(([^)#]+)\)", README.read_text())
    assert links, "the README links to docs/"
    for link in links:
        assert not link.startswith(("..", "/")) and (ROOT / link).exists(), f"README links to {link!r}"
    assert "../" not in README.read_text().replace("](", "")
