"""The model tier of faithfulness (issue 27), on tiny checkers the tests build from a config
with random weights: real loading code (an HHEM-shaped checkpoint, a MiniCheck-shaped
seq2seq folder), batching, truncation, the score cache by input hash and the cascade.
Nothing is downloaded: the hub is offline and every model is a local folder."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from pytest_ragdive.core.config import RagdiveConfig
from pytest_ragdive.core.records import Context, Conversation, Turn
from pytest_ragdive.metrics import nli
from pytest_ragdive.metrics.grounding import faithfulness_of, unit_supports
from pytest_ragdive.metrics.offline import Grounding, score_conversation

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

WORDS = (
    "determine if the hypothesis is true given premise ? : refunds are issued within 14 days to original payment "
    "method gift cards never expire pro plan costs $12 per month predict 0 1 a b c d e f g h"
).split()


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


def _tokenizer(folder: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {w: i for i, w in enumerate(["<pad>", "</s>", "<unk>", *dict.fromkeys(WORDS)])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>"
    )
    fast.save_pretrained(str(folder))


def _t5_config() -> object:
    return transformers.T5Config(
        vocab_size=64, d_model=16, d_kv=4, d_ff=32, num_layers=1, num_decoder_layers=1, num_heads=2,
        num_labels=2, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0,
    )


@pytest.fixture(scope="module")
def hhem_dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, object]:
    """(checkpoint, foundation, the model): HHEM's layout, its T5 stored under ``t5.``, the
    tied embedding once, and a foundation folder with the config and tokenizer."""
    from safetensors.torch import save_file

    torch.manual_seed(0)
    base = tmp_path_factory.mktemp("flan-t5-tiny")
    _t5_config().save_pretrained(str(base))
    _tokenizer(base)
    model = transformers.T5ForTokenClassification(_t5_config()).eval()
    ckpt = tmp_path_factory.mktemp("hhem-tiny")
    state = {f"t5.{k}": v.contiguous() for k, v in model.state_dict().items() if k != "transformer.encoder.embed_tokens.weight"}
    save_file(state, str(ckpt / "model.safetensors"))
    (ckpt / "config.json").write_text(json.dumps({"model_type": "HHEMv2", "foundation": str(base)}))
    return ckpt, base, model


@pytest.fixture(scope="module")
def minicheck_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    torch.manual_seed(1)
    folder = tmp_path_factory.mktemp("minicheck-tiny")
    model = transformers.T5ForConditionalGeneration(_t5_config()).eval()
    model.save_pretrained(str(folder))
    _tokenizer(folder)
    return folder, model


PAIRS = [
    ("refunds are issued within 14 days to the original payment method", "refunds are issued within 14 days"),
    ("gift cards never expire", "the pro plan costs $12 per month"),
    ("a b c", "d e f g h"),
]


def _hhem_reference(model: object, base: Path, pairs: Sequence[tuple[str, str]]) -> list[float]:
    """HHEM's own predict(): the prompt, the first token's logits, softmax, class 1."""
    tok = transformers.AutoTokenizer.from_pretrained(str(base))
    out = []
    for premise, hyp in pairs:
        enc = tok([nli.HHEM_PROMPT.format(text1=premise, text2=hyp)], return_tensors="pt")
        with torch.no_grad():
            logits = model(**enc).logits[:, 0, :]
        out.append(float(torch.softmax(logits, dim=-1)[0, 1]))
    return out


def test_hhem_checkpoint_loads_and_scores_as_hhem_does(hhem_dirs: tuple[Path, Path, object]) -> None:
    ckpt, base, model = hhem_dirs
    scorer, name = nli.load_scorer("hhem", str(ckpt))
    got = scorer(PAIRS)
    # the weights were loaded (random init would not reproduce the model's own scores), batched
    # with padding exactly as one pair at a time
    assert got == pytest.approx(_hhem_reference(model, base, PAIRS), abs=1e-5)
    assert [scorer([p])[0] for p in PAIRS] == pytest.approx(got, abs=1e-5)
    assert all(0.0 <= s <= 1.0 for s in got)
    assert name.startswith(f"hhem:{ckpt}@")


def test_minicheck_folder_loads_and_reads_the_label_tokens(minicheck_dir: tuple[Path, object]) -> None:
    folder, model = minicheck_dir
    scorer, name = nli.load_scorer("minicheck", str(folder))
    got = scorer(PAIRS)
    tok = transformers.AutoTokenizer.from_pretrained(str(folder))
    labels = [tok("0", add_special_tokens=False)["input_ids"][0], tok("1", add_special_tokens=False)["input_ids"][0]]
    want = []
    for premise, hyp in PAIRS:
        enc = tok([f"predict: {premise}</s>{hyp}"], return_tensors="pt")
        with torch.no_grad():
            logits = model(**enc, decoder_input_ids=torch.zeros((1, 1), dtype=torch.long)).logits[:, 0, :]
        want.append(float(torch.softmax(logits[:, labels], dim=-1)[0, 1]))
    assert got == pytest.approx(want, abs=1e-5)
    assert name.startswith("minicheck:")


def test_a_long_premise_is_cut_and_the_hypothesis_kept(hhem_dirs: tuple[Path, Path, object]) -> None:
    _, base, _ = hhem_dirs
    tok = transformers.AutoTokenizer.from_pretrained(str(base))
    premise = " ".join(["refunds are issued within 14 days"] * 400)
    hyp = "gift cards never expire"
    text = nli.fit_pair(tok, nli.HHEM_PROMPT, premise, hyp, 64)
    assert len(tok(text)["input_ids"]) <= 64
    assert text.endswith("Hypothesis: " + hyp)
    assert nli.fit_pair(tok, nli.HHEM_PROMPT, "a b c", hyp, 64) == nli.HHEM_PROMPT.format(text1="a b c", text2=hyp)


def test_a_checkpoint_of_another_shape_is_one_clear_error(tmp_path: Path, hhem_dirs: tuple[Path, Path, object]) -> None:
    from safetensors.torch import save_file

    _, base, _ = hhem_dirs
    save_file({"t5.something.else": torch.zeros(2)}, str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text(json.dumps({"foundation": str(base)}))
    with pytest.raises(nli.NLIModelError, match="is not an HHEM checkpoint"):
        nli.load_scorer("hhem", str(tmp_path))


def test_a_model_id_is_never_downloaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # an empty cache
    with pytest.raises(nli.NLIModelError, match="never downloads weights: run `huggingface-cli download vectara/x`"):
        nli.resolve_model("vectara/x")


class Counting:
    """A pair scorer that counts what it is asked: premise with "14 days" supports, else not."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def __call__(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        self.calls.append(len(pairs))
        return [0.9 if "14 days" in p and "14 days" in h else 0.1 for p, h in pairs]


def test_scores_are_cached_by_input_hash_in_memory_and_on_disk(tmp_path: Path) -> None:
    fake = Counting()
    tier = nli.NLITier(fake, "fake:1", batch_size=2, cache=nli.ScoreCache(tmp_path))
    units = ["Refunds take 14 days.", "Gift cards never expire.", "Plans cost $12."]
    first = tier.unit_scores(units, ["Refunds are issued within 14 days."])
    assert first == [0.9, 0.1, 0.1] and fake.calls == [2, 1]  # 3 pairs in batches of 2
    assert tier.unit_scores(units, ["Refunds are issued within 14 days."]) == first
    assert fake.calls == [2, 1]  # nothing scored twice
    again = nli.NLITier(fake, "fake:1", cache=nli.ScoreCache(tmp_path))  # a new process, same folder
    assert again.unit_scores(units, ["Refunds are issued within 14 days."]) == first and fake.calls == [2, 1]
    other = nli.NLITier(fake, "fake:2", cache=nli.ScoreCache(tmp_path))  # other weights: other keys
    other.unit_scores(units[:1], ["Refunds are issued within 14 days."])
    assert fake.calls == [2, 1, 1]


def test_long_premises_are_chunked_and_a_unit_scores_its_best_chunk() -> None:
    text = "Gift cards never expire. " * 30 + "Refunds are issued within 14 days."
    chunks = nli.chunk_premise(text, 20)
    assert all(len(c.split()) <= 20 for c in chunks) and len(chunks) > 3
    assert chunks[-1].endswith("Refunds are issued within 14 days.")
    tier = nli.NLITier(Counting(), "fake", chunk_words=20)
    assert tier.unit_scores(["Refunds take 14 days."], [text]) == [0.9]
    assert tier.unit_scores(["Refunds take 14 days."], []) == [0.0]


CTX = [Context(id="r#1", doc_id="refunds", text="Refunds are issued within 14 days to the original payment method.")]


def _conv(answer: str) -> Conversation:
    return Conversation(id="c", turns=[Turn(rag_input="How long do refunds take?", answer=answer, contexts=CTX)])


def test_the_cascade_rescores_only_the_uncertain_turns() -> None:
    fake = Counting()
    tier = nli.NLITier(fake, "fake:hhem", band=(0.3, 0.9))
    sure = _conv("Refunds are issued within 14 days to the original payment method.")  # offline 1.0
    score_conversation(sure, grounding=Grounding(tier=tier))
    assert sure.turns[0].scores["faithfulness"] == 1.0 and fake.calls == []
    assert "faithfulness" not in sure.turns[0].verdicts

    answer = "Refunds are issued within 14 days. Gift cards never expire."
    offline = faithfulness_of(unit_supports(answer, CTX))
    assert 0.3 <= offline < 0.9  # uncertain
    unsure = _conv(answer)
    score_conversation(unsure, grounding=Grounding(tier=tier))
    t = unsure.turns[0]
    sups = unit_supports(answer, CTX)
    want = (sups[0].weight * 0.9 + sups[1].weight * 0.1) / (sups[0].weight + sups[1].weight)
    assert t.scores["faithfulness"] == pytest.approx(want)
    assert t.verdicts["faithfulness"].model == "fake:hhem"
    assert "uncertain band [0.3, 0.9)" in t.verdicts["faithfulness"].reason
    assert tier.turns_rescored == 2  # faithfulness and faithfulness_strict
    calls = list(fake.calls)
    score_conversation(unsure, grounding=Grounding(tier=tier))  # idempotent, from the cache
    assert fake.calls == calls and t.scores["faithfulness"] == pytest.approx(want)


def test_the_config_builds_the_tier(tmp_path: Path, hhem_dirs: tuple[Path, Path, object]) -> None:
    from pytest_ragdive.metrics.backends import check_grounding, offline_grounding

    ckpt, _, _ = hhem_dirs
    cfg = RagdiveConfig.model_validate(
        {"faithfulness_backend": "nli", "nli": {"model": str(ckpt), "band": [0.2, 0.8]}, "cache_dir": str(tmp_path)}
    )
    check_grounding(cfg)
    g = offline_grounding(cfg)
    assert g.tier is not None and g.tier.band == (0.2, 0.8) and g.tier.name.startswith("hhem:")
    assert 0.0 <= g.tier.scorer(PAIRS[:1])[0] <= 1.0
    missing = RagdiveConfig.model_validate({"faithfulness_backend": "nli", "nli": {"model": str(tmp_path / "nope")}})
    with pytest.raises(nli.NLIModelError, match="neither a folder nor a model"):
        check_grounding(missing)
