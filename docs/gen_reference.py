"""Write the generated parts of the docs from the code that defines them.

- docs/configuration.md: every key of ``RagdiveConfig`` and its sub-models
  (``core/config.py``, ``core/config_models.py``, ``online/config.py``) with its
  dotted key, type, default and one line;
- docs/metrics.md: every metric of ``metrics/registry.py`` with its direction,
  level, dimension and definition.

A key's one line is its ``Field(description=...)``, else the trailing ``# comment``
on the field's own source line(s), else (a twin of a command-line option) the
option's help text in ``plugin/options.py``. A key with none of them is an error.

    python docs/gen_reference.py            # rewrite the generated sections
    python docs/gen_reference.py --check    # exit 1 when a page is out of date

Only the text between the ``<!-- generated: NAME -->`` and ``<!-- end generated -->``
markers is rewritten; the prose around it is edited by hand.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import io
import sys
import textwrap
import tokenize
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Literal

from annotated_types import Ge, Gt, Le, Lt, MinLen
from pydantic import BaseModel
from pydantic.fields import FieldInfo

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from a checkout
    sys.path.insert(0, str(ROOT))

from pytest_ragdive.core.config import RagdiveConfig  # noqa: E402
from pytest_ragdive.core.config_models import DEFAULT_GATE, GATE_POLICY_KEYS  # noqa: E402
from pytest_ragdive.metrics.registry import ARROW, METRICS  # noqa: E402
from pytest_ragdive.plugin.options import FLAGS  # noqa: E402

DOCS = ROOT / "docs"
END = "<!-- end generated -->"


# --------------------------------------------------------------------------
# one line per field: description, trailing comment, option help


def _class_comments(cls: type) -> dict[str, str]:
    """Field name -> the trailing comment(s) on the lines of its assignment in ``cls``'s source."""
    try:
        lines, start = inspect.getsourcelines(cls)
    except (OSError, TypeError):
        return {}
    source = textwrap.dedent("".join(lines))
    comments: dict[int, str] = {}
    code_lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
        elif tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
            code_lines.add(tok.start[0])
    out: dict[str, str] = {}
    body = ast.parse(source).body[0]
    assert isinstance(body, ast.ClassDef)
    for node in body.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            end = node.end_lineno or node.lineno
            # a comment on a line of the field that also holds its code (not a block above it)
            found = [comments[n] for n in range(node.lineno, end + 1) if n in comments and n in code_lines]
            if found:
                out[node.target.id] = " ".join(found)
    return out


def _comments(model: type[BaseModel]) -> dict[str, str]:
    out: dict[str, str] = {}
    for cls in reversed(model.__mro__):  # a subclass's comment wins
        if isinstance(cls, type) and issubclass(cls, BaseModel) and cls is not BaseModel:
            out.update(_class_comments(cls))
    return out


FLAG_OF = {key: flag for flag, key, _metavar, _help in FLAGS}
HELP_OF = {key: help_ for _flag, key, _metavar, help_ in FLAGS}


def one_line(model: type[BaseModel], name: str, field: FieldInfo, top_level: bool) -> str | None:
    if field.description:
        return " ".join(field.description.split())
    comment = _comments(model).get(name)
    if comment:
        return comment
    if top_level and name in HELP_OF:
        return HELP_OF[name]
    return None


# --------------------------------------------------------------------------
# types and defaults as a user writes them (TOML)


def _bounds(field: FieldInfo) -> str:
    parts = []
    for m in field.metadata:
        for cls, sign, attr in ((Ge, "≥", "ge"), (Gt, ">", "gt"), (Le, "≤", "le"), (Lt, "<", "lt")):
            if isinstance(m, cls):
                parts.append(f"{sign} {getattr(m, attr)}")
        if isinstance(m, MinLen) and m.min_length:
            parts.append(f"at least {m.min_length} item(s)")
    return ", ".join(parts)


def _plural(kind: str) -> str:
    return kind + "s" if kind in ("string", "number", "integer", "boolean") else kind


def type_text(ann: Any) -> str:
    origin = typing.get_origin(ann)
    args = typing.get_args(ann)
    if ann is str:
        return "string"
    if ann is bool:
        return "boolean"
    if ann is int:
        return "integer"
    if ann is float:
        return "number"
    if ann is Any:
        return "any JSON value"
    if isinstance(ann, type) and issubclass(ann, Enum):
        return " \\| ".join(f'"{m.value}"' for m in ann)
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return "table"
    if origin is Literal:
        return " \\| ".join(f'"{a}"' if isinstance(a, str) else str(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        kinds = [type_text(a) for a in args if a is not type(None)]
        text = " or ".join(kinds)
        return text + (", optional" if type(None) in args else "")
    if origin is list:
        return f"list of {_plural(type_text(args[0]))}"
    if origin is dict:
        return f"table of {_plural(type_text(args[1]))}"
    if origin is typing.Annotated:
        return type_text(args[0])
    return getattr(ann, "__name__", str(ann))


def toml(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml(v) for v in value) + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{k} = {toml(v)}" for k, v in value.items()) + " }"
    return str(value)


def _cell(text: str) -> str:
    return text.replace("|", "\\|") if "\\|" not in text else text


# --------------------------------------------------------------------------
# the walk over the models


@dataclass
class Row:
    section: str
    key: str
    type: str
    default: str
    flag: str
    line: str | None


def _models_in(ann: Any) -> list[type[BaseModel]]:
    args = typing.get_args(ann) or (ann,)
    return [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]


def rows() -> list[Row]:
    out: list[Row] = []

    def walk(model: type[BaseModel], prefix: str, section: str, instance: BaseModel | None, top: bool) -> None:
        later: list[tuple[type[BaseModel], str, str, BaseModel | None]] = []
        for name, field in model.model_fields.items():
            key = f"{prefix}{name}"
            ann = field.annotation
            default = getattr(instance, name) if instance is not None else field.get_default(call_default_factory=True)
            line = one_line(model, name, field, top)
            if top and name == "gate_policy":  # written as gate.method etc.
                later.append((_models_in(ann)[0], "gate.", "gate", default))
                continue
            if top and name == "gate":
                inner = FieldInfo.from_annotation(typing.get_args(ann)[1])
                out.append(Row("gate", "gate.<metric>", f"number {_bounds(inner)}".strip(), "see below", "", line))
                continue
            if typing.get_origin(ann) is dict and _models_in(typing.get_args(ann)[1]):
                sub = _models_in(typing.get_args(ann)[1])[0]
                later.append((sub, f"{key}.<name>.", f"{key}.<name>", None))
                continue
            subs = _models_in(ann)
            if subs and all(a is not str for a in (typing.get_args(ann) or (ann,))):
                later.append((subs[0], f"{key}.", key, default if isinstance(default, BaseModel) else None))
                continue
            typ = type_text(ann)
            bounds = _bounds(field)
            if bounds:
                base, optional = (typ[: -len(", optional")], ", optional") if typ.endswith(", optional") else (typ, "")
                typ = f"{base} {bounds}{optional}"
            shown = "required" if field.is_required() else toml(default)
            out.append(Row(section, key, typ, shown,
                           FLAG_OF.get(name, "") if top else "", line))
            if subs:  # a string or a table (target)
                later.append((subs[0], f"{key}.", key, None))
        for sub, sub_prefix, sub_section, sub_instance in later:
            walk(sub, sub_prefix, sub_section, sub_instance, False)

    walk(RagdiveConfig, "", "", None, True)
    return out


def missing() -> list[str]:
    """Keys without a one-line description."""
    return [r.key for r in rows() if not r.line]


SECTION_TITLES = {
    "": "`[tool.ragdive]`",
    "gate": "`[tool.ragdive.gate]`",
}


def _section_title(section: str) -> str:
    return SECTION_TITLES.get(section, f"`[tool.ragdive.{section}]`")


def _model_of_section() -> dict[str, type[BaseModel]]:
    """Section -> the model whose docstring introduces it."""
    out: dict[str, type[BaseModel]] = {"": RagdiveConfig}

    def walk(model: type[BaseModel], prefix: str) -> None:
        for name, field in model.model_fields.items():
            ann = field.annotation
            if prefix == "" and name == "gate_policy":
                out["gate"] = _models_in(ann)[0]
                continue
            if typing.get_origin(ann) is dict and _models_in(typing.get_args(ann)[1]):
                sub = _models_in(typing.get_args(ann)[1])[0]
                out[f"{prefix}{name}.<name>"] = sub
                walk(sub, f"{prefix}{name}.<name>.")
                continue
            subs = _models_in(ann)
            if subs:
                out[f"{prefix}{name}"] = subs[0]
                walk(subs[0], f"{prefix}{name}.")

    walk(RagdiveConfig, "")
    return out


def _intro(model: type[BaseModel]) -> str:
    doc = model.__doc__ or ""
    if model is RagdiveConfig or doc.startswith("A base class for creating Pydantic models") or not doc.strip():
        return ""
    return " ".join(doc.strip().split("\n\n")[0].split())


def _default(text: str) -> str:
    return text if text in ("", "see below", "required", "unset") else f"`{_cell(text)}`"


def config_reference() -> str:
    by_section: dict[str, list[Row]] = {}
    for r in rows():
        by_section.setdefault(r.section, []).append(r)
    models = _model_of_section()
    lines: list[str] = []
    for section, rs in by_section.items():
        lines += [f"### {_section_title(section)}", ""]
        intro = _intro(models[section]) if section in models else ""
        if intro:
            lines += [intro, ""]
        if section == "":
            lines += ["| key | type | default | option | description |", "|---|---|---|---|---|"]
            for r in rs:
                flag = f"`{r.flag}`" if r.flag else ""
                lines.append(f"| `{r.key}` | {_cell(r.type)} | {_default(r.default)} | {flag} | {_cell(r.line or '')} |")
        else:
            lines += ["| key | type | default | description |", "|---|---|---|---|"]
            for r in rs:
                lines.append(f"| `{r.key}` | {_cell(r.type)} | {_default(r.default)} | {_cell(r.line or '')} |")
        if section == "gate":
            pairs = ", ".join(f"`{m} = {toml(t)}`" for m, t in DEFAULT_GATE.items())
            lines += ["", f"Default tolerances (used when `[tool.ragdive.gate]` sets none): {pairs}. "
                      f"The policy keys ({', '.join(f'`{k}`' for k in GATE_POLICY_KEYS)}) sit beside the tolerances."]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def metrics_reference() -> str:
    lines = ["| metric | better | level | dimension | definition |", "|---|---|---|---|---|"]
    for spec in METRICS.values():
        lines.append(f"| `{spec.name}` | {ARROW[spec.direction]} {spec.direction} | {spec.level} | "
                     f"{spec.dimension} | {_cell(spec.definition)} |")
    return "\n".join(lines) + "\n"


GENERATED = {
    "configuration.md": {"config-reference": config_reference},
    "metrics.md": {"metrics-registry": metrics_reference},
}


def _replace(text: str, name: str, body: str, page: str) -> str:
    start = f"<!-- generated: {name} -->"
    if start not in text or END not in text.split(start, 1)[1]:
        raise SystemExit(f"docs/{page}: markers {start} ... {END} not found")
    head, rest = text.split(start, 1)
    _old, tail = rest.split(END, 1)
    return f"{head}{start}\n<!-- written by docs/gen_reference.py: edit the models, then run it -->\n\n{body}\n{END}{tail}"


def pages() -> Iterator[tuple[Path, str, str]]:
    """(path, committed text, text as the generator writes it) per generated page."""
    for page, parts in GENERATED.items():
        path = DOCS / page
        old = path.read_text(encoding="utf-8")
        new = old
        for name, fn in parts.items():
            new = _replace(new, name, fn(), page)
        yield path, old, new


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a generated page is out of date")
    args = parser.parse_args(argv)
    gaps = missing()
    if gaps:
        print("config keys without a one-line description (add Field(description=...) or a trailing # comment):",
              ", ".join(gaps), file=sys.stderr)
        return 1
    stale = []
    for path, old, new in pages():
        if old != new:
            stale.append(path.name)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    if args.check and stale:
        print(f"out of date: {', '.join(stale)} (run python docs/gen_reference.py)", file=sys.stderr)
        return 1
    print(("up to date: " if args.check or not stale else "written: ") + ", ".join(stale or GENERATED))
    return 0


if __name__ == "__main__":
    sys.exit(main())
