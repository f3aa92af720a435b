"""Tables as text lines, the one table layout of the text reports: columns padded
to their widest cell (plain), or a Markdown table (``markdown=True``)."""

from __future__ import annotations


def text_table(header: list[str], rows: list[list[str]], markdown: bool = False) -> list[str]:
    if markdown:
        return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + [
            "| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows
        ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    out.append("  ".join("-" * w for w in widths))
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return out
