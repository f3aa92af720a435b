"""The model tier of faithfulness (``faithfulness_backend = "nli"``): a small
hallucination / NLI checker on CPU, through ``transformers`` (the ``[nli]`` extra), for
the turns whose offline faithfulness falls in an uncertain band (:class:`NLITier`).

Two checkers, both loaded from a local folder or from a model id already in the
Hugging Face cache (``local_files_only``: the plugin never downloads weights):

``hhem`` (default)
    Vectara's HHEM-2.1-Open (``vectara/hallucination_evaluation_model``, Apache-2.0): a
    flan-t5-base encoder with a two-class token-classification head. Its checkpoint
    stores that model under ``t5.``; its own loading code (``trust_remote_code``) is not
    run: the weights are loaded into ``T5ForTokenClassification`` built from the
    foundation's config (``nli.base``, default the ``foundation`` its config.json names,
    ``google/flan-t5-base``, which must be downloaded too, for its config and tokenizer).
    Score: the softmax of the first token's logits, class 1 (consistent), of the prompt
    ``"<pad> Determine if the hypothesis is true given the premise?\\n\\nPremise: {premise}
    \\n\\nHypothesis: {hypothesis}"``.
``minicheck``
    MiniCheck-Flan-T5-Large (``lytang/MiniCheck-Flan-T5-Large``): a seq2seq model read on
    ``"predict: {premise}</s>{hypothesis}"`` with one decoder step; score: the softmax over
    the first tokens of "0" and "1", that of "1".

Premises longer than ``chunk_words`` words are cut into chunks at sentence boundaries
and a unit's score is its best chunk's (MiniCheck's own aggregation); a premise that
still exceeds ``max_tokens`` is truncated (the hypothesis never is). Scores are cached by
the hash of (checker, model, premise, hypothesis), in memory and, given a folder, on
disk, so a re-run pays nothing. Accuracy figures for these checkers are their authors'
(HHEM: Vectara's model card; MiniCheck: Tang, Laban and Durrett, EMNLP 2024), not
measured by this project.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..core.errors import FatalRunError, UsageError
from .text import split_sentences

if TYPE_CHECKING:
    from .grounding import Support

__all__ = [
    "HHEM_PROMPT",
    "NLIKind",
    "NLIModelError",
    "NLITier",
    "PairScorer",
    "ScoreCache",
    "chunk_premise",
    "fit_pair",
    "load_scorer",
    "resolve_model",
]

NLIKind = Literal["hhem", "minicheck"]
#: (premise, hypothesis) pairs -> P(the premise supports the hypothesis), one per pair
PairScorer = Callable[[Sequence[tuple[str, str]]], list[float]]

HHEM_PROMPT = "<pad> Determine if the hypothesis is true given the premise?\n\nPremise: {text1}\n\nHypothesis: {text2}"


class NLIModelError(UsageError, FatalRunError):
    """The NLI checker cannot be loaded (no [nli] extra, no model, a model of another shape):
    a usage error when the session checks it, and it ends the run if found later."""


# --------------------------------------------------------------------------- the tier


def chunk_premise(text: str, chunk_words: int) -> list[str]:
    """``text`` in chunks of at most ``chunk_words`` words, cut at sentence boundaries (a
    longer sentence is a chunk of its own); an empty text: no chunk."""
    chunks: list[str] = []
    cur: list[str] = []
    n = 0
    for sentence in split_sentences(text):
        w = len(sentence.split())
        if cur and n + w > chunk_words:
            chunks.append(" ".join(cur))
            cur, n = [], 0
        cur.append(sentence)
        n += w
    if cur:
        chunks.append(" ".join(cur))
    return chunks


class ScoreCache:
    """Scores by the hash of their inputs: in memory, and in ``folder`` when given, through the
    judge cache's data-only store (:func:`pytest_ragdive.llm.disk.open_db`: no pickle, no path
    taken from a row). A stored score that is not a number in [0, 1] (or a refused row) is
    counted in :attr:`dropped`, deleted and scored again; a folder that cannot be opened as a
    cache is said once and the scores stay in memory."""

    def __init__(self, folder: str | Path | None = None) -> None:
        self._mem: dict[str, float] = {}
        self._disk: Any = None
        self.dropped = 0
        if folder is not None:
            from ..llm.disk import open_db

            try:
                Path(folder).mkdir(parents=True, exist_ok=True)
                self._disk = open_db(folder, 30.0)
            except Exception as e:  # noqa: BLE001 - a corrupt cache.db, an unwritable folder: one line
                _warn(f"NLI score cache {folder} is unusable ({type(e).__name__}: {e}); scores are kept in memory only")

    @staticmethod
    def key(model: str, premise: str, hypothesis: str) -> str:
        blob = json.dumps([model, premise, hypothesis], ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()

    def get(self, key: str) -> float | None:
        hit = self._mem.get(key)
        if hit is None and self._disk is not None:
            try:
                v = self._disk.get(key)
            except ValueError:  # a pickled value or one kept in a file: refused, never read
                v = _BAD
            if v is None:
                return None
            if type(v) in (int, float) and 0.0 <= float(v) <= 1.0:
                hit = self._mem[key] = float(v)
            else:
                self._drop(key)
        return hit

    def _drop(self, key: str) -> None:
        self.dropped += 1
        if self.dropped == 1:
            _warn(f"NLI score cache: a stored entry that is not a score was dropped ({key[:16]}...)")
        try:
            self._disk.delete(key)
        except Exception:  # noqa: BLE001 - scored again either way
            pass

    def put(self, key: str, value: float) -> None:
        self._mem[key] = value
        if self._disk is not None:
            try:
                self._disk.set(key, float(value))
            except Exception:  # noqa: BLE001 - a busy or read-only cache: kept in memory
                pass

    def __len__(self) -> int:
        return len(self._mem)


_BAD = object()


def _warn(msg: str) -> None:
    import warnings

    from ..core.errors import RagdiveCacheWarning

    warnings.warn(msg, RagdiveCacheWarning, stacklevel=3)


@dataclass
class NLITier:
    """Rescores the faithfulness of uncertain turns with a pair scorer.

    ``band`` = (lo, hi): a turn whose offline faithfulness is at least ``lo`` and below
    ``hi`` is uncertain; only those pay for the model. ``name`` identifies the checker and
    its weights in the cache key and in the turn's verdict."""

    scorer: PairScorer
    name: str
    band: tuple[float, float] = (0.3, 0.9)
    chunk_words: int = 400
    batch_size: int = 8
    cache: ScoreCache = field(default_factory=ScoreCache)
    pairs_scored: int = 0  # pairs sent to the model (cache misses)
    turns_rescored: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)  # one forward pass at a time

    def uncertain(self, score: float) -> bool:
        lo, hi = self.band
        return lo <= score < hi or score == hi == 1.0

    def unit_scores(self, units: Sequence[str], premises: Sequence[str]) -> list[float]:
        """Per unit, the best score over the premises' chunks (0.0 with no premise)."""
        chunks = [c for p in premises for c in chunk_premise(p, self.chunk_words)]
        if not chunks:
            return [0.0] * len(units)
        keys = {(c, u): self.cache.key(self.name, c, u) for u in units for c in chunks}
        with self._lock:
            todo = [pair for pair, k in keys.items() if self.cache.get(k) is None]
            for i in range(0, len(todo), self.batch_size):
                batch = todo[i : i + self.batch_size]
                scores = self.scorer(batch)
                if len(scores) != len(batch):
                    raise NLIModelError(f"the NLI checker {self.name} returned {len(scores)} scores for {len(batch)} pairs")
                for pair, s in zip(batch, scores, strict=True):
                    self.cache.put(keys[pair], float(s))
                self.pairs_scored += len(batch)
            return [max(self.cache.get(keys[(c, u)]) or 0.0 for c in chunks) for u in units]

    def rescore(self, supports: Sequence[Support], premises: Sequence[str]) -> float:
        """The term-weighted mean of the units' model scores (the offline faithfulness's weights)."""
        from dataclasses import replace

        from .grounding import faithfulness_of

        scores = self.unit_scores([s.unit for s in supports], premises)
        self.turns_rescored += 1
        return faithfulness_of([replace(s, score=p) for s, p in zip(supports, scores, strict=True)])


# --------------------------------------------------------------------------- loading


def _need_transformers() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise NLIModelError(
            f'faithfulness_backend = "nli" needs {exc.name}: pip install "pytest-ragdive[nli]" '
            "(torch and transformers)"
        ) from None
    return torch, transformers


def resolve_model(model: str, what: str = "nli.model") -> Path:
    """A local folder, or the cached snapshot of a Hugging Face model id (never downloaded)."""
    p = Path(model).expanduser()
    if p.is_dir():
        return p.resolve()
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(model, local_files_only=True))
    except Exception:  # noqa: BLE001 - not cached, not an id, no hub client: one line
        raise NLIModelError(
            f"{what} {model!r} is neither a folder nor a model in the Hugging Face cache; the plugin never "
            f"downloads weights: run `huggingface-cli download {model}` (or give the folder)"
        ) from None


def _weights(folder: Path) -> dict[str, Any]:
    st = folder / "model.safetensors"
    if st.is_file():
        from safetensors.torch import load_file

        return dict(load_file(str(st)))
    pt = folder / "pytorch_model.bin"
    if pt.is_file():
        torch, _ = _need_transformers()
        return dict(torch.load(str(pt), map_location="cpu", weights_only=True))
    raise NLIModelError(f"no model.safetensors or pytorch_model.bin in {folder}")


def _fingerprint(folder: Path) -> str:
    """A short hash of the model's config and weight files (names, sizes): the cache key
    moves when the weights do."""
    h = hashlib.sha256()
    for f in sorted(folder.iterdir()):
        if f.is_file() and (f.suffix in (".safetensors", ".bin") or f.name == "config.json"):
            h.update(f.name.encode())
            h.update(f.read_bytes() if f.name == "config.json" else str(f.stat().st_size).encode())
    return h.hexdigest()[:12]


def _truncate(tokenizer: Any, text: str, budget: int) -> str:
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return text if len(ids) <= budget else tokenizer.decode(ids[: max(budget, 0)], skip_special_tokens=True)


def fit_pair(tokenizer: Any, template: str, premise: str, hypothesis: str, max_tokens: int) -> str:
    """``template`` filled with the premise (``text1``) and the hypothesis (``text2``) in at
    most ``max_tokens`` tokens: the hypothesis kept (up to half of them), the premise cut
    (two tokens of margin for the joins)."""
    overhead = len(tokenizer(template.format(text1="", text2=""))["input_ids"])
    hyp = _truncate(tokenizer, hypothesis, max_tokens // 2)
    room = max_tokens - overhead - len(tokenizer(hyp, add_special_tokens=False)["input_ids"]) - 2
    return template.format(text1=_truncate(tokenizer, premise, room), text2=hyp)


def _hhem(folder: Path, base: str | None, max_tokens: int, device: str) -> PairScorer:
    torch, tf = _need_transformers()
    cfg_file = folder / "config.json"
    meta = json.loads(cfg_file.read_text()) if cfg_file.is_file() else {}
    foundation = resolve_model(base or meta.get("foundation") or "google/flan-t5-base", "nli.base")
    config = tf.AutoConfig.from_pretrained(str(foundation), local_files_only=True)
    config.num_labels = 2
    tokenizer = tf.AutoTokenizer.from_pretrained(str(foundation), local_files_only=True)
    model = tf.T5ForTokenClassification(config)
    state = {k.removeprefix("t5."): v for k, v in _weights(folder).items()}
    if "transformer.shared.weight" in state:  # HHEM stores the tied embedding once
        state.setdefault("transformer.encoder.embed_tokens.weight", state["transformer.shared.weight"])
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        raise NLIModelError(f"{folder} is not an HHEM checkpoint for {foundation}: {str(exc).splitlines()[0]}") from None
    model.to(device).eval()

    def score(pairs: Sequence[tuple[str, str]]) -> list[float]:
        texts = [fit_pair(tokenizer, HHEM_PROMPT, p, h, max_tokens) for p, h in pairs]
        enc = tokenizer(texts, return_tensors="pt", padding=True, truncation=True, max_length=max_tokens).to(device)
        with torch.inference_mode():
            logits = model(**enc).logits[:, 0, :]
        return [float(x) for x in torch.softmax(logits.float(), dim=-1)[:, 1].tolist()]

    return score


def _minicheck(folder: Path, max_tokens: int, device: str) -> PairScorer:
    torch, tf = _need_transformers()
    tokenizer = tf.AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    model = tf.AutoModelForSeq2SeqLM.from_pretrained(str(folder), local_files_only=True)
    model.to(device).eval()
    # the first token of each label ("0": no support, "1": support), as MiniCheck reads them
    labels = [tokenizer(x, add_special_tokens=False)["input_ids"][0] for x in ("0", "1")]
    template = "predict: {text1}" + (tokenizer.eos_token or "</s>") + "{text2}"

    def score(pairs: Sequence[tuple[str, str]]) -> list[float]:
        texts = [fit_pair(tokenizer, template, p, h, max_tokens) for p, h in pairs]
        enc = tokenizer(texts, return_tensors="pt", padding=True, truncation=True, max_length=max_tokens).to(device)
        start = torch.full((enc["input_ids"].shape[0], 1), model.config.decoder_start_token_id or 0, device=device)
        with torch.inference_mode():
            logits = model(**enc, decoder_input_ids=start).logits[:, 0, :]
        probs = torch.softmax(logits[:, labels].float(), dim=-1)[:, 1]
        return [float(x) for x in probs.tolist()]

    return score


def load_scorer(
    kind: NLIKind, model: str, *, base: str | None = None, max_tokens: int = 2048, device: str = "cpu"
) -> tuple[PairScorer, str]:
    """(scorer, name) of a checker: ``model`` a folder or a cached model id (:func:`resolve_model`)."""
    folder = resolve_model(model)
    if kind == "hhem":
        scorer = _hhem(folder, base, max_tokens, device)
    elif kind == "minicheck":
        scorer = _minicheck(folder, max_tokens, device)
    else:  # pragma: no cover - the config's Literal
        raise NLIModelError(f"unknown NLI checker {kind!r}, expected hhem or minicheck")
    return scorer, f"{kind}:{model}@{_fingerprint(folder)}"
