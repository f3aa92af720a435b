"""The five conditions of the sharded diagnosis as *users*: each proposes the next user turn.

A user is asked for the next turn with the conversation so far
(``await user.next_turn(conv)``); it returns an unanswered :class:`Turn`, or
None to end the conversation. Before it proposes, it scores the reply it has
not seen yet (:class:`ReplyScorer`: response class, extracted answer, F1 and
exact match, supporting documents retrieved), so the stopping rule can use it.

=========  ==========================================================================
FULL       the fully specified question in one turn
CONCAT     every shard in one turn, as a bullet list
SHARDED    one shard per turn (turn 1: the intent shard verbatim); stops at an
           exact-match answer or after the reply to the last shard
RECAP      SHARDED, then always one final turn that restates every shard revealed so
           far, and only those (:data:`RECAP_INTRO` and the shards as a list; after an
           early correct answer the unrevealed ones are not listed) and asks again;
           RECAP is scored on that turn (:attr:`ShardedInfo.score_f1`), BEST over the
           whole conversation is kept as a second figure
SNOWBALL   like SHARDED, but each turn repeats the user's earlier utterances (the ones
           that revealed a shard) before the new one, as Lost in Conversation does:
           "Just to reiterate," the earlier ones as a list, "Also," the new one
=========  ==========================================================================

Offline the shards are revealed verbatim, in order. With a ``simulator``
(:class:`pytest_ragdive.sharded.simulator.ShardSimulator`), turns after the first are
the LLM user's words: at most one new shard per turn, possibly none when it
answers a clarification question. Every turn records the shards it states
(``turn.sharded.shard_ids``), the one it first reveals (``new_shard``) and the user's
own words (``utterance``). A conversation never runs past ``max_turns`` (shards + 3
by default), RECAP's recap turn aside.
"""

from __future__ import annotations

from typing import Protocol

from ..core.records import Conversation, Turn
from .aptitude import best
from .classify import classify_response, extract_answer, score_answer
from .questions import Shard, ShardedQuestion
from .records import Condition, ShardedInfo, ShardedTurn

__all__ = [
    "RECAP_INTRO",
    "SNOWBALL_ALSO",
    "SNOWBALL_INTRO",
    "Classifier",
    "Judge",
    "ReplyScorer",
    "ShardedUser",
    "Simulator",
    "concat_text",
    "recap_text",
    "sharded_conversation",
    "snowball_text",
]

RECAP_INTRO = "To recap, here is everything I told you. Please answer my question:"
SNOWBALL_INTRO = "Just to reiterate,"
SNOWBALL_ALSO = "Also,"


def concat_text(shards: list[Shard]) -> str:
    """CONCAT: every shard as one bullet list, in order."""
    return "\n".join(f"- {s.shard}" for s in shards)


def recap_text(shards: list[Shard]) -> str:
    """RECAP's last turn: a framing sentence and the shards given (the ones revealed so far)."""
    return f"{RECAP_INTRO}\n{concat_text(shards)}"


def snowball_text(earlier: list[str], new: str) -> str:
    """A SNOWBALL turn: the user's earlier utterances restated, then the new one."""
    if not earlier:
        return new
    return f"{SNOWBALL_INTRO}\n" + "\n".join(f"- {e}" for e in earlier) + f"\n\n{SNOWBALL_ALSO}\n\n{new}"


def sharded_conversation(q: ShardedQuestion, condition: Condition, suite: str, run: int) -> Conversation:
    """The empty conversation of one condition of one question in one run (id ``<question>.<condition>``)."""
    return Conversation(
        id=f"{q.id}.{condition}",
        suite=suite,
        run=run,
        source="sharded",
        category=q.category,
        sharded=ShardedInfo(
            question_id=q.id, condition=condition, supporting_doc_ids=list(q.supporting_doc_ids), shards_total=len(q.shards)
        ),
    )


class Classifier(Protocol):
    """A response classifier with a model: the class of ``reply`` given the conversation."""

    async def classify(self, conv: Conversation, turn: Turn) -> str | None: ...


class Judge(Protocol):
    """The optional binary semantic-correctness judge: 1.0 correct, 0.0 not, None unusable."""

    async def judge(self, q: ShardedQuestion, extracted: str) -> float | None: ...


class Simulator(Protocol):
    """The LLM user: the next user message and the shard it reveals (None: none)."""

    async def next_message(self, q: ShardedQuestion, conv: Conversation, unrevealed: list[Shard]) -> tuple[str, int | None]: ...


class ReplyScorer:
    """Classifies and scores one reply, writing ``turn.sharded`` and ``turn.scores["answer_attempt_rate"]``.

    Offline the class comes from :func:`classify_response` (``require_answer_line``: a
    target that marks its answers with ``Answer:``); a ``classifier`` overrides it where
    it returns a class. Only answer attempts get an extracted answer and scores."""

    def __init__(
        self, *, require_answer_line: bool = False, classifier: Classifier | None = None, judge: Judge | None = None
    ) -> None:
        self.require_answer_line = require_answer_line
        self.classifier = classifier
        self.judge = judge

    async def score(self, q: ShardedQuestion, conv: Conversation, turn: Turn) -> None:
        st = turn.sharded or ShardedTurn()
        turn.sharded = st
        st.response_class = classify_response(turn.answer, require_answer_line=self.require_answer_line)
        st.class_source = "rule"
        if self.classifier is not None and turn.answer is not None and st.response_class != "missing":
            got = await self.classifier.classify(conv, turn)
            if got is not None:
                st.response_class, st.class_source = got, "llm"  # type: ignore[assignment]
        sup = set(q.supporting_doc_ids)
        st.retrieved_supporting = sorted({c.source_id for c in turn.contexts} & sup)
        if st.response_class == "answer_attempt":
            st.extracted_answer = extract_answer(turn.answer)
            st.answer_f1, st.exact_match = score_answer(st.extracted_answer, q.references)
            if self.judge is not None:
                st.judged_correct = await self.judge.judge(q, st.extracted_answer)
        else:
            st.extracted_answer = st.answer_f1 = st.exact_match = st.judged_correct = None
        turn.scores["answer_attempt_rate"] = 1.0 if st.response_class == "answer_attempt" else 0.0


def _summarise(conv: Conversation, judging: bool) -> None:
    """BEST and the final turn's scores; with a judge, a conversation without a judged
    answer attempt scores 0 on it (None: no judge ran)."""
    info = conv.sharded
    assert info is not None
    shs = [t.sharded for t in conv.turns if t.sharded is not None and t.answer is not None]
    info.best_f1 = best(s.answer_f1 for s in shs)
    info.best_em = best(s.exact_match for s in shs)
    info.best_judged = best(s.judged_correct for s in shs) if judging else None
    last = shs[-1] if shs else None
    info.final_f1 = None if last is None else last.answer_f1 or 0.0
    info.final_em = None if last is None else last.exact_match or 0.0
    info.final_judged = None if last is None or not judging else last.judged_correct or 0.0


class ShardedUser:
    """One condition of one question (see the module docstring)."""

    def __init__(
        self,
        question: ShardedQuestion,
        condition: Condition,
        scorer: ReplyScorer | None = None,
        *,
        simulator: Simulator | None = None,
        max_turns: int | None = None,
    ) -> None:
        self.q = question
        self.condition = condition
        self.scorer = scorer or ReplyScorer()
        self.simulator = simulator
        self.shards = sorted(question.shards, key=lambda s: s.shard_id)
        self.max_turns = max_turns or len(self.shards) + 3

    def _turn(
        self, conv: Conversation, text: str, shard_ids: list[int], new: int | None,
        *, utterance: str | None = None, recap: bool = False,
    ) -> Turn:
        i = len(conv.turns)
        single = self.condition in ("full", "concat")
        return Turn(
            index=i,
            rag_input=text,
            question_type="Single" if single else ("Initial" if i == 0 else "Follow-up"),
            relevant_doc_ids=list(self.q.supporting_doc_ids),
            sharded=ShardedTurn(shard_ids=shard_ids, new_shard=new, utterance=utterance or text, recap=recap),
        )

    def _revealed(self, conv: Conversation) -> list[int]:
        return [t.sharded.new_shard for t in conv.turns if t.sharded is not None and t.sharded.new_shard is not None]

    def finish(self, conv: Conversation) -> None:
        """Summarise BEST once more (the loop may have ended on a target error)."""
        if conv.sharded is not None:
            _summarise(conv, self.scorer.judge is not None)

    def _recap(self, conv: Conversation) -> Turn:
        """The recap turn: the shards revealed so far, and only those (the study's RECAP
        "consolidates all previously revealed shards"; after an early correct answer or at
        ``max_turns`` some were never revealed, and restating them would hand the target
        information the conversation did not give it)."""
        revealed = set(self._revealed(conv))
        shards = [s for s in self.shards if s.shard_id in revealed]
        return self._turn(conv, recap_text(shards), [s.shard_id for s in shards], None, recap=True)

    async def next_turn(self, conv: Conversation) -> Turn | None:
        info = conv.sharded
        assert info is not None, "a sharded user needs a conversation from sharded_conversation()"
        last = conv.turns[-1] if conv.turns else None
        if last is not None and last.answer is not None and (last.sharded is None or last.sharded.response_class is None):
            await self.scorer.score(self.q, conv, last)
            _summarise(conv, self.scorer.judge is not None)
        ids = [s.shard_id for s in self.shards]
        if not conv.turns:
            if self.condition == "full":
                return self._turn(conv, self.q.question, ids, None)
            if self.condition == "concat":
                return self._turn(conv, concat_text(self.shards), ids, None)
            first = self.shards[0]
            return self._turn(conv, first.shard, [first.shard_id], first.shard_id)
        if self.condition in ("full", "concat"):
            info.stop_reason = "single_turn"
            return None
        if last is not None and last.sharded is not None and last.sharded.recap:
            return None  # the recap turn was answered
        revealed = self._revealed(conv)
        unrevealed = [s for s in self.shards if s.shard_id not in revealed]
        if info.best_em >= 1.0:
            info.stop_reason = "correct"
        elif not unrevealed or len(conv.turns) >= self.max_turns:
            info.stop_reason = "max_turns" if unrevealed else "all_shards"
        if info.stop_reason is not None:
            return self._recap(conv) if self.condition == "recap" else None
        if self.simulator is not None:
            text, new = await self.simulator.next_message(self.q, conv, unrevealed)
            if new is not None and new not in {s.shard_id for s in unrevealed}:
                new = None  # an id that is not an unrevealed shard reveals nothing
        else:
            text, new = unrevealed[0].shard, unrevealed[0].shard_id
        if self.condition == "snowball":
            # the user's earlier utterances that revealed a shard, in order (Lost in Conversation)
            earlier = [t.sharded.utterance or t.rag_input for t in conv.turns
                       if t.sharded is not None and t.sharded.new_shard is not None]
            shard_ids = [*revealed, *([new] if new is not None else [])]
            return self._turn(conv, snowball_text(earlier, text), shard_ids, new, utterance=text)
        return self._turn(conv, text, [new] if new is not None else [], new)
