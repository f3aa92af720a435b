"""Sentence similarity from an embedded static model: WordLlama ``l2_supercat`` (256 dims).

The model ships inside the ``wordllama`` wheel (a 16 MB token-embedding matrix and
its tokenizer file): nothing is downloaded, ever. A sentence's embedding is the mean
of its tokens' rows, normalised to unit length, as ``wordllama``'s own dense ``embed``
computes it (a test pins the two equal); the similarity of two sentences is the
cosine of their embeddings.

The files are read straight from the installed package (located with
``importlib.util.find_spec``, which does not import it): ``import wordllama`` costs
about a third of a second more, imports ``requests`` and calls
``logging.basicConfig`` on the root logger, which a pytest plugin must not do.

Loading happens once per process, on the first sentence a suite scores (about 0.2 s:
the matrix and the tokenizer); importing this module costs nothing (numpy,
``tokenizers`` and ``safetensors`` are imported by :func:`embedder`). Embeddings are
cached per text (:data:`CACHE_SIZE` texts, 1 KiB each).
"""

from __future__ import annotations

import importlib.util
import threading
from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import FatalRunError, UsageError
from ..core.memo import hold_with_memos

if TYPE_CHECKING:
    import numpy as np

__all__ = ["CACHE_SIZE", "DIM", "MODEL", "Embedder", "SemanticModelError", "embedder", "model_files"]

#: the WordLlama configuration the wheel carries, and its width
MODEL = "l2_supercat"
DIM = 256
#: texts whose embeddings one process keeps
CACHE_SIZE = 32768


class SemanticModelError(UsageError, FatalRunError):
    """The embedded model cannot be loaded (``wordllama`` missing, or without its files): a
    usage error when the session checks it, and it ends the run if found later."""


def model_files() -> tuple[Path, Path]:
    """(weights, tokenizer) of the installed ``wordllama`` wheel; a one-line
    :class:`SemanticModelError` when the package or its files are missing."""
    spec = importlib.util.find_spec("wordllama")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise SemanticModelError(
            "offline faithfulness and correctness need the embedded model of the 'wordllama' package "
            "(pip install 'wordllama>=0.4,<0.5'), or set faithfulness_backend = \"lexical\""
        )
    root = Path(locations[0])
    weights = root / "weights" / f"{MODEL}_{DIM}.safetensors"
    tokenizer = root / "tokenizers" / f"{MODEL}_tokenizer_config.json"
    missing = [str(p) for p in (weights, tokenizer) if not p.is_file()]
    if missing:
        raise SemanticModelError(
            f"the installed wordllama has no bundled {MODEL} model ({', '.join(missing)} missing): "
            "install wordllama>=0.4,<0.5"
        )
    return weights, tokenizer


class Embedder:
    """Unit-length sentence embeddings from a token-embedding matrix and its tokenizer."""

    def __init__(self, matrix: np.ndarray, tokenizer: Any) -> None:
        self.matrix = matrix
        self.tokenizer = tokenizer
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()  # scoring may run in worker threads (the NLI tier)
        # the model is the process's; its rows per text are the session's (core/memo.py)
        hold_with_memos(f"{__name__}.Embedder.rows", lambda: len(self._cache), self.forget)

    def forget(self) -> None:
        """Drop the rows kept per text (a session's end)."""
        with self._lock:
            self._cache.clear()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One unit-length row per text (a text without a token: a zero row)."""
        with self._lock:
            return self._embed(texts)

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        out = np.zeros((len(texts), self.matrix.shape[1]), dtype=np.float32)
        todo: dict[str, list[int]] = {}
        for i, t in enumerate(texts):
            hit = self._cache.get(t)
            if hit is not None:
                self._cache.move_to_end(t)
                out[i] = hit
            else:
                todo.setdefault(t, []).append(i)
        if todo:
            new = list(todo)
            rows = self._embed_new(new)
            for t, row in zip(new, rows, strict=True):
                out[todo[t]] = row
                self._cache[t] = row
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return out

    def _embed_new(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        # one text at a time: ``encode_batch`` hands even two texts to the tokenizer's thread
        # pool, whose start and spin cost several times the encoding itself (the same ids)
        encode = self.tokenizer.encode
        ids = [np.asarray(encode(t, add_special_tokens=False).ids, dtype=np.int64) for t in texts]
        rows = np.zeros((len(texts), self.matrix.shape[1]), dtype=np.float32)
        for i, tok in enumerate(ids):
            if len(tok):
                v = self.matrix[np.clip(tok, 0, self.matrix.shape[0] - 1)].mean(axis=0)
                n = float(np.linalg.norm(v))
                if n > 0:
                    rows[i] = v / n
        return rows

    def similarity(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        """The cosine of every text of ``a`` with every text of ``b`` (len(a) x len(b))."""
        import numpy as np

        if not a or not b:
            return np.zeros((len(a), len(b)), dtype=np.float32)
        return self.embed(a) @ self.embed(b).T


@lru_cache(maxsize=1)  # not a session memo (core/memo.py): the embedded model (30 MB, read-only), loaded once per process
def embedder() -> Embedder:
    """The process's embedder, loaded on first use (:func:`model_files`)."""
    weights, tokenizer_file = model_files()
    try:
        import numpy as np
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer
    except ImportError as exc:  # wordllama's own dependencies
        raise SemanticModelError(f"the embedded model needs {exc.name} (pip install 'wordllama>=0.4,<0.5')") from None
    matrix = np.ascontiguousarray(load_file(str(weights))["embedding.weight"], dtype=np.float32)
    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return Embedder(matrix, tokenizer)
