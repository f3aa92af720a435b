"""The docs stay true to the code: the generated reference pages are up to date,
every config key has its one line, every metric of the registry is on the metrics
page, the README keeps its Quick start and its links, and every page is in the
MkDocs nav (``mkdocs build --strict`` in .ci/run checks links and anchors too)."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from conftest import load_script

from pytest_ragdive.metrics.registry import ARROW, METRICS

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"

QUICK_START = (
    "python3.11 -m venv .venv && .venv/bin/pip install -e '.[dev]' && "
    "(cd example_project && ../.venv/bin/pytest --ragdive-baseline=baseline.json)\n"
    ".venv/bin/pytest -n 2\n"
)


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    return load_script(DOCS / "gen_reference.py")


def test_every_config_key_has_a_line(gen: ModuleType) -> None:
    rows = gen.rows()
    keys = {r.key for r in rows}
    # the walk reaches every sub-model: a sample of keys from each of them
    for key in ("runs", "target.url", "gate.method", "gate.<metric>", "suites.<name>.sharded_runs",
                "suites.<name>.generated.window_chars", "llm.timeout_s", "llm.judge.model", "online.latency_p95_s"):
        assert key in keys, key
    assert len(rows) == len(keys), "a key listed twice"
    assert gen.missing() == [], "config keys without a Field description or a trailing # comment"


def test_generated_pages_are_up_to_date(gen: ModuleType) -> None:
    for path, committed, generated in gen.pages():
        assert committed == generated, f"{path.name} is out of date: run python docs/gen_reference.py"


def test_configuration_page_lists_every_key(gen: ModuleType) -> None:
    text = (DOCS / "configuration.md").read_text(encoding="utf-8")
    for row in gen.rows():
        assert f"| `{row.key}` |" in text, row.key


def _twins_table() -> list[tuple[str, str]]:
    """(metric, arrow) per metric in the 'Offline and judged' table of metrics.md."""
    text = (DOCS / "metrics.md").read_text(encoding="utf-8")
    section = text.split("## Offline and judged", 1)[1].split("\n## ", 1)[0]
    out: list[tuple[str, str]] = []
    for line in section.splitlines():
        if line.startswith("| `"):
            cells = line.split("|")
            names = re.findall(r"`([a-z0-9_]+)`", cells[1])
            arrows = [a.strip() for a in cells[2].split(",")]
            arrows = arrows * len(names) if len(arrows) == 1 else arrows
            assert len(arrows) == len(names), line
            out += list(zip(names, arrows, strict=True))
    return out


def test_every_metric_has_its_offline_and_judged_twin() -> None:
    rows = _twins_table()
    assert sorted(n for n, _ in rows) == sorted(METRICS), "metrics.md's offline/judged table lists every metric once"
    for name, arrow in rows:
        assert arrow == ARROW[METRICS[name].direction], f"{name}: {arrow} in metrics.md, {METRICS[name].direction} in the registry"


def test_readme_quick_start_is_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    block = text.split("## Quick start", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    assert block == QUICK_START
    assert len(text.splitlines()) <= 320, "the README stays short: the rest belongs in docs/"


def test_readme_links_resolve() -> None:
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if "://" not in link]
    assert local, "the README links to the docs"
    for link in local:
        assert (ROOT / link).exists(), f"README links to {link}, which does not exist"


def test_every_page_is_in_the_nav() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = {page for entry in config["nav"] for page in entry.values()}
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md") if "_incoming" not in p.parts}
    assert pages == nav, f"not in the nav: {sorted(pages - nav)}; in the nav but missing: {sorted(nav - pages)}"
