"""Per-case assertions of golden data: the ``assert:`` list of a turn or single-turn case.

Each type is one small class: its argument is checked when the golden file loads (a bad
regular expression, an unknown type or language, a schema that is not one is a
``file:line`` error, exit 4), and :meth:`check` says why an answer violates it (None: it
holds). Written as ``{type: NAME, value: ARG}`` or, shorter, ``{NAME: ARG}``:

===============  ==================================================================
type             holds when
===============  ==================================================================
contains         the answer contains the text (case-sensitive)
not_contains     the answer does not contain the text (case-sensitive)
icontains        the answer contains the text, ignoring case
regex            the regular expression (Python ``re``) matches somewhere in the answer
not_regex        it matches nowhere
max_words        the answer has at most that many words (whitespace-separated)
cites            the document id is among the turn's cited ids (citations and inline
                 ``[id]`` markers) or the source ids of its retrieved contexts
language         the answer's language (ISO 639-1, the offline word-table detector of
                 :func:`pytest_ragdive.online.signals.detect_language`) is that one
json_schema      the answer (a ```json fence around it is allowed) is JSON valid under the
                 schema (``jsonschema``)
python           ``module:function`` called as ``fn(turn, conversation)`` returns True
                 (False or a text, the reason, fails it; so does raising)
rubric           an LLM judge says yes to the text about the answer (binary, cached like
                 every judge call; without a model it is skipped, never failed)
===============  ==================================================================

A violated assertion fails its item (the check, the turn, the question and the answer in
the failure text) and counts in ``assertion_pass_rate`` (:mod:`.checks` runs them).
"""

from __future__ import annotations

import importlib
import json
import re
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

if TYPE_CHECKING:
    from ..core.records import Conversation, Turn

__all__ = ["TYPES", "Assertion", "parse_assertions"]


class _Check(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @property
    def label(self) -> str:
        """How a report names it: ``regex '\\d+ days'``."""
        value = getattr(self, "value", "")
        text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
        text = text if len(text) <= 80 else text[:77] + "..."
        return f"{getattr(self, 'type', '?')} {text!r}" if isinstance(value, str) else f"{getattr(self, 'type', '?')} {text}"

    @property
    def judged(self) -> bool:
        """Checked by an LLM judge (``rubric``), not by :meth:`check`."""
        return False

    def check(self, turn: Turn, conv: Conversation) -> str | None:
        raise NotImplementedError


class Contains(_Check):
    type: Literal["contains"]
    value: str = Field(min_length=1)

    def check(self, turn: Turn, conv: Conversation) -> str | None:
        return None if self.value in (turn.answer or "") else f"the answer does not contain {self.value!r}"


class NotContains(_Check):
    type: Literal["not_contains"]
    value: str = Field(min_length=1)

    def check(self, turn: Turn, conv: Conversation) -> str | None:
        return f"the answer contains {self.value!r}" if self.value in (turn.answer or "") else None


class IContains(_Check):
    type: Literal["icontains"]
    value: str = Field(min_length=1)

    def check(self, turn: Turn, conv: Conversation) -> str | None:
        found = self.value.casefold() in (turn.answer or "").casefold()
        return None if found else f"the answer does not contain {self.value!r} (ignoring case)"


def _compiled(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as e:
        raise ValueError(f"bad regular expression {pattern!r}: {e}") from None


class Regex(_Check):
    type: Literal["regex"]
    value: str = Field(min_length=1)

    @field_validator("value")
    @classmethod
    def _pattern(cls, v: str) -> str:
        _compiled(v)
        return v

    def check(self, turn: Turn, conv: Conversation) -> str | None:
        return None if _compiled(self.value).search(turn.answer or "") else "no match in the answer"


class NotRegex(Regex):
    type: Literal["not_regex"]  # type: ignore[assignment]

    def check(self, turn: Turn, conv: Conversation) -> str | None:
        m = _compiled(self.value).search(turn.answer or "")
        return None if m is None else f"the answer matches it: {m.group(0)[:80]!r}"


class MaxWords(_Check):
    type: Literal["max_words"]
    value: int = Field(ge=1, strict=True)

    def check(self, turn: Turn, conv: Conversation) -> str | None:
        n = len((turn.answer or "").split())
        return None if n <= self.value else f"the answer has {n} words"


class Cites(_Check):
    type: Literal["cites"]
    value: str = Field(min_length=1)

    def check(self, turn: Turn, conv: Conversation) -> str | None:
        from .safety import cited_ids

        used = cited_ids(turn) | {c.source_id.strip().casefold() for c in turn.contexts}
        return None if self.value.strip().casefold() in used else (
            f"{self.value!r} is neither cited nor among the retrieved contexts ({', '.join(sorted(used)) or 'none'})"
        )


def _languages() -> tuple[str, ...]:
    from ..online.signals import _SCRIPTS, _STOPWORDS

    return tuple(dict.fromkeys([*_STOPWORDS, *(lang for lang, _, _ in _SCRIPTS)]))


class Language(_Check):
    type: Literal["language"]
    value: str

    @field_validator("value")
    @classmethod
    def _known(cls, v: str) -> str:
        langs = _languages()
        if v.lower() not in langs:
            raise ValueError(f"language {v!r}: the offline detector knows {', '.join(langs)}")
        return v.lower()

    def check(self, turn: Turn, conv: Conversation) -> str | None:
        from ..online.signals import detect_language

        got = detect_language(turn.answer or "")
        return None if got == self.value else f"the answer reads as {got!r}"


def _json_answer(text: str) -> Any:
    t = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", t, flags=re.S)
    return json.loads(fenced.group(1) if fenced else t)


class JsonSchema(_Check):
    type: Literal["json_schema"]
    value: dict[str, Any]

    @field_validator("value")
    @classmethod
    def _schema(cls, v: dict[str, Any]) -> dict[str, Any]:
        from jsonschema import SchemaError, validators

        try:
            validators.validator_for(v).check_schema(v)
        except SchemaError as e:
            raise ValueError(f"not a JSON schema: {e.message}") from None
        return v

    @property
    def label(self) -> str:
        return "json_schema"

    def check(self, turn: Turn, conv: Conversation) -> str | None:
        from jsonschema import validators

        try:
            data = _json_answer(turn.answer or "")
        except ValueError as e:
            return f"the answer is not JSON: {e}"
        errors = sorted(validators.validator_for(self.value)(self.value).iter_errors(data), key=lambda e: list(e.path))
        if not errors:
            return None
        where = "/".join(str(p) for p in errors[0].path) or "(top level)"
        return f"{where}: {errors[0].message}"


class Python(_Check):
    type: Literal["python"]
    value: str

    @field_validator("value")
    @classmethod
    def _ref(cls, v: str) -> str:
        if v.count(":") != 1 or not all(v.split(":")):
            raise ValueError(f"python check {v!r}: expected 'package.module:function'")
        return v

    def check(self, turn: Turn, conv: Conversation) -> str | None:
        mod, _, attr = self.value.partition(":")
        try:
            fn = getattr(importlib.import_module(mod), attr)
        except Exception as e:  # noqa: BLE001 - the user's module: any error is its own
            return f"cannot load {self.value}: {type(e).__name__}: {e}"
        try:
            got = fn(turn, conv)
        except Exception as e:  # noqa: BLE001 - the user's check raised: it fails, the run goes on
            return f"{self.value} raised {type(e).__name__}: {e}"
        if got is True:
            return None
        if got is False:
            return f"{self.value} returned False"
        if isinstance(got, str) and got.strip():
            return got.strip()
        return f"{self.value} returned {got!r} (expected True, False or a reason)"


class Rubric(_Check):
    type: Literal["rubric"]
    value: str = Field(min_length=1)

    @property
    def judged(self) -> bool:
        return True

    def check(self, turn: Turn, conv: Conversation) -> str | None:
        raise TypeError("a rubric assertion is checked by the LLM judge (metrics.checks)")


Assertion = Annotated[
    Contains | NotContains | IContains | Regex | NotRegex | MaxWords | Cites | Language | JsonSchema | Python | Rubric,
    Field(discriminator="type"),
]
TYPES: tuple[str, ...] = ("contains", "not_contains", "icontains", "regex", "not_regex", "max_words", "cites",
                          "language", "json_schema", "python", "rubric")
_ADAPTER: TypeAdapter[list[Assertion]] = TypeAdapter(list[Assertion])


def normalise(raw: Any) -> Any:
    """``{contains: x}`` (the short form) as ``{type: contains, value: x}``; an unknown type,
    or an item that is neither form, is a ValueError naming it."""
    if not isinstance(raw, list):
        raise ValueError("expected a list of checks")
    out = []
    for i, item in enumerate(raw, 1):
        if isinstance(item, dict) and "type" not in item and len(item) == 1:
            (name, value), = item.items()
            item = {"type": name, "value": value}
        if not isinstance(item, dict) or "type" not in item:
            raise ValueError(f"check {i}: expected {{type: NAME, value: ...}} or {{NAME: ...}}, got {item!r}")
        if item["type"] not in TYPES:
            raise ValueError(f"check {i}: unknown type {item['type']!r}, expected one of {', '.join(TYPES)}")
        out.append(item)
    return out


def parse_assertions(raw: Any) -> list[Assertion]:
    """The checks of one ``assert:`` list (raises ValueError or pydantic's ValidationError)."""
    return _ADAPTER.validate_python(normalise(raw))
