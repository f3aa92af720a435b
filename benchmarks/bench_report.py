"""report.html of a large failing run: size, time to write, time for a browser to load it.

    python benchmarks/bench_report.py                     # 30, 500, 2000 conversations
    python benchmarks/bench_report.py --sizes 2000 --no-browser

The example's core suite runs once with its "memory" reader (a faithfulness regression,
gated against the committed baseline, so the failing rows, the evidence and the baseline
answers are all there); its 30 scored conversations are then copied under new ids, whole
(retrieved contexts included), to the size asked for, and the outcome is concluded again
against the same baseline. The columns: the conversations; report.html's size; the pages
of further conversations (beyond the worst ``WORST`` in full, ``PAGE`` per page) and their
largest size; the seconds to write report.html and its pages (Python, piece by piece);
and, with Chromium installed, the seconds from navigation to the load event of
report.html at 1280 x 800 (``tests/browser.py``). Targets: report.html of 2,000
conversations under 25 MB and under 2 s to render.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]


def outcome_of(n: int):  # type: ignore[no-untyped-def]
    from example_outcome import EXAMPLE, example_outcome

    from pytest_ragdive.core.config import load_config
    from pytest_ragdive.gate.baseline import load_baseline
    from pytest_ragdive.gate.conclude import RunFacts, conclude

    seed = example_outcome(history="full", reader="memory", markup=False)
    convs = []
    for k in range((n + len(seed.conversations) - 1) // len(seed.conversations)):
        for c in seed.conversations:
            convs.append(c if k == 0 else c.model_copy(update={"id": f"{c.id}-copy{k}"}))
    convs = convs[:n]
    cfg = load_config(EXAMPLE / "pyproject.toml")
    cfg.suite, cfg.baseline = "core", str(EXAMPLE / "baseline.json")
    return conclude(convs, cfg, load_baseline(EXAMPLE / "baseline.json"), RunFacts(planned=n))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="30,500,2000")
    ap.add_argument("--no-browser", action="store_true")
    args = ap.parse_args()
    from browser import CHROMIUM, Browser

    from pytest_ragdive.reports.html import PAGE, WORST, write_html

    print(f"| conversations | report.html MB | pages | largest page MB | write s | browser load s |  (worst {WORST} in full, "
          f"{PAGE} per page)")
    print("|---|---|---|---|---|---|")
    for n in (int(x) for x in args.sizes.split(",")):
        outcome = outcome_of(n)
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            t0 = time.perf_counter()
            path = write_html(out, outcome)
            write = time.perf_counter() - t0
            pages = sorted(out.glob("report-conversations-*.html"))
            largest = max((p.stat().st_size for p in pages), default=0) / 1e6
            load = "n/a"
            if CHROMIUM and not args.no_browser:
                with Browser() as b:
                    t0 = time.perf_counter()
                    b.open(path.as_uri())
                    load = f"{time.perf_counter() - t0:.2f}"
            print(f"| {n} | {path.stat().st_size / 1e6:.2f} | {len(pages)} | {largest:.2f} | {write:.2f} | {load} |")


if __name__ == "__main__":
    main()
