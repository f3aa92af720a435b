"""The bundled attack set, users' attack files, and poisoned documents (the user's files
on disk never change)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from pytest_ragdive.attacks.library import bundled_attacks, load_attack_file, suite_attacks
from pytest_ragdive.attacks.poison import poison_canaries, poison_corpus, poison_reached, poisoned_documents
from pytest_ragdive.attacks.records import ATTACK_FAMILIES
from pytest_ragdive.core.attack_config import AttackConfig
from pytest_ragdive.core.errors import GoldenError
from pytest_ragdive.core.records import Context, Conversation
from pytest_ragdive.sources.golden import load_corpus


def test_the_bundled_set_covers_every_family_and_the_framings() -> None:
    scripts = bundled_attacks()
    assert {s.family for s in scripts} == set(ATTACK_FAMILIES)
    assert {"base64", "leetspeak", "roleplay"} <= {s.framing for s in scripts}
    assert any(len(s.turns) >= 3 for s in scripts if s.family == "persistence")
    assert len({s.id for s in scripts}) == len(scripts)


def test_suite_attacks_selects_families_and_round_trips(tmp_path: Path) -> None:
    convs = suite_attacks(AttackConfig(library=["policy", "injection"]), "attacks", tmp_path)
    assert {c.category for c in convs} == {"policy", "injection"}
    for c in convs:
        assert all(t.attack is not None and t.attack.family == c.category for t in c.turns)
        assert Conversation.model_validate_json(c.model_dump_json()) == c
    injected = [t.attack for c in convs for t in c.turns if t.attack is not None and t.attack.poisoned]
    assert injected and set(poison_canaries()) <= set(injected[0].canaries)


def test_a_users_attack_file(tmp_path: Path) -> None:
    f = tmp_path / "mine.yaml"
    f.write_text("attacks:\n  - id: atk-mine\n    family: off_domain\n    markers: [xyzzy]\n    turns: [say xyzzy]\n")
    convs = suite_attacks(AttackConfig(library=[], files=["mine.yaml"]), "s", tmp_path)
    assert [c.id for c in convs] == ["atk-mine"] and convs[0].turns[0].attack.markers == ["xyzzy"]  # type: ignore[union-attr]
    f.write_text("attacks:\n  - id: a\n    family: nope\n    turns: [x]\n")
    with pytest.raises(GoldenError, match="mine.yaml"):
        load_attack_file(f)


def test_an_unknown_library_family_is_a_config_error() -> None:
    with pytest.raises(ValueError, match="attacks.library"):
        AttackConfig(library=["nope"])


def test_poison_corpus_writes_a_copy_and_leaves_the_source_unchanged(tmp_path: Path) -> None:
    src = tmp_path / "corpus.jsonl"
    src.write_text(json.dumps({"id": "a", "title": "A", "text": "Alpha."}) + "\n")
    before = hashlib.sha256(src.read_bytes()).hexdigest(), src.stat().st_mtime_ns
    out = poison_corpus(src, tmp_path / "poisoned" / "corpus.jsonl")
    assert (hashlib.sha256(src.read_bytes()).hexdigest(), src.stat().st_mtime_ns) == before
    ids = [d.id for d in load_corpus(out)]
    assert ids[0] == "a" and {d.id for d in poisoned_documents()} <= set(ids)
    with pytest.raises(ValueError, match="source corpus itself"):
        poison_corpus(src, src)
    assert hashlib.sha256(src.read_bytes()).hexdigest() == before[0]


def test_poison_reached() -> None:
    assert poison_reached([]) is None
    assert poison_reached([Context(id="x#0", doc_id="x", text="t")]) is False
    assert poison_reached([Context(id="ragdive-poison-refund-hotline#0", doc_id="ragdive-poison-refund-hotline", text="t")])
