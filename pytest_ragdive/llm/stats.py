"""Per-role accounting of the LLM client (calls, requests, cache hits, tokens,
cost) and the cache's counters. Workers of pytest-xdist send theirs to the
controller, which merges them. Imports nothing heavy: :mod:`pytest_ragdive.gate.outcome`
holds an :class:`LLMStats`."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

ROLES: tuple[str, ...] = ("simulator", "validator", "judge", "classifier")


class CacheStats(BaseModel):
    """Counters of one process's cache use (mergeable across xdist workers)."""

    model_config = ConfigDict(validate_assignment=False)

    hits: int = 0
    misses: int = 0
    stores: int = 0
    corrupt: int = 0
    errors: int = 0
    waits: int = 0  # misses answered by another process's in-flight call
    rejected: int = 0  # replies not stored because they stayed invalid (a rerun asks again)
    unusable: int = 0  # processes that found the cache unusable (corrupt cache.db) and ran without it
    expired: int = 0  # entries older than cache_ttl_days, treated as misses

    def merge(self, other: CacheStats) -> CacheStats:
        for name in type(self).model_fields:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        return self

    @property
    def lookups(self) -> int:
        return self.hits + self.misses

    def summary(self) -> str:
        n = self.lookups
        rate = f" ({self.hits / n:.0%} hit rate)" if n else ""
        extra = ""
        if self.corrupt:
            extra += f", {self.corrupt} corrupt dropped"
        if self.rejected:
            extra += f", {self.rejected} invalid not stored"
        if self.expired:
            extra += f", {self.expired} expired (cache_ttl_days)"
        if self.errors:
            extra += f", {self.errors} errors"
        if self.unusable:
            extra += ", UNUSABLE (corrupt cache.db): ran without a cache"
        return f"cache: {self.hits} hits, {self.misses} misses{rate}, {self.stores} stored{extra}"


class UsageStats(BaseModel):
    """Counters of one role (or one role and model)."""

    model_config = ConfigDict(validate_assignment=False)

    calls: int = 0  # complete_* calls (a repair call counts once more)
    requests: int = 0  # HTTP requests, retries included
    retries: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None  # None while no request had a known price
    unpriced_requests: int = 0
    invalid_outputs: int = 0
    repairs: int = 0
    errors: int = 0  # calls that ended in LLMCallError
    batched: int = 0  # requests answered through the batch API (judge_mode = "batch")
    batch_fallbacks: int = 0  # requests sent directly because their batch did not complete

    def add(self, other: UsageStats) -> UsageStats:
        for name in UsageStats.model_fields:
            if name == "cost_usd":
                continue
            setattr(self, name, getattr(self, name) + getattr(other, name))
        if other.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + other.cost_usd
        return self

    def bump(self, **deltas: Any) -> None:
        # several times per call: counters straight in the field values (pydantic's
        # __setattr__ cost more than the rest of the accounting; nothing is validated
        # on assignment here anyway)
        values = self.__dict__
        for name, d in deltas.items():
            if name == "cost_usd":
                if d is not None:
                    values["cost_usd"] = (values["cost_usd"] or 0.0) + d
            else:
                values[name] += d


class RoleStats(UsageStats):
    models: dict[str, UsageStats] = Field(default_factory=dict)

    def add(self, other: UsageStats) -> RoleStats:
        super().add(other)
        if isinstance(other, RoleStats):
            for m, s in other.models.items():
                self.models.setdefault(m, UsageStats()).add(s)
        return self


class LLMStats(BaseModel):
    """Per-role accounting plus the cache counters; ``merge`` combines workers' stats."""

    model_config = ConfigDict(validate_assignment=False)

    roles: dict[str, RoleStats] = Field(default_factory=dict)
    cache: CacheStats = Field(default_factory=CacheStats)
    notes: list[str] = Field(default_factory=list)  # one line per event worth saying (a batch fell back)

    def note(self, line: str) -> None:
        if line not in self.notes:
            self.notes.append(line)

    def bump(self, role: str, model: str, **deltas: Any) -> None:
        rs = self.roles.get(role)
        if rs is None:  # not setdefault: that builds a model on every call
            rs = self.roles[role] = RoleStats()
        rs.bump(**deltas)
        ms = rs.models.get(model)
        if ms is None:
            ms = rs.models[model] = UsageStats()
        ms.bump(**deltas)

    def merge(self, other: LLMStats | dict[str, Any]) -> LLMStats:
        """Add another process's stats (an LLMStats or its ``model_dump()``) into this one."""
        if not isinstance(other, LLMStats):
            other = LLMStats.model_validate(other)
        for role, rs in other.roles.items():
            self.roles.setdefault(role, RoleStats()).add(rs)
        self.cache.merge(other.cache)
        for line in other.notes:
            self.note(line)
        return self

    @classmethod
    def merged(cls, parts: list[LLMStats | dict[str, Any]]) -> LLMStats:
        out = cls()
        for p in parts:
            out.merge(p)
        return out

    def total(self) -> UsageStats:
        t = UsageStats()
        for rs in self.roles.values():
            t.add(UsageStats.model_validate(rs.model_dump(exclude={"models"})))
        return t

    def spent_usd(self) -> float:
        """Known spend in USD (requests of unknown price count 0)."""
        return sum(rs.cost_usd or 0.0 for rs in self.roles.values())

    def spend_breakdown(self) -> list[str]:
        out = []
        for role in sorted(self.roles):
            for model, s in sorted(self.roles[role].models.items()):
                if s.requests == 0:
                    continue
                cost = f"${s.cost_usd:.4f}" if s.cost_usd is not None else "price unknown"
                out.append(
                    f"{role} {model}: {cost} for {s.requests} requests "
                    f"({s.prompt_tokens} prompt + {s.completion_tokens} completion tokens)"
                )
        return out

    def table(self) -> list[str]:
        """Text table lines: one row per role and model, then the total and the cache line."""
        head = (
            "role",
            "model",
            "calls",
            "requests",
            "hits",
            "misses",
            "prompt tok",
            "compl tok",
            "cost USD",
            "invalid",
        )
        rows: list[tuple[str, ...]] = []

        def row(role: str, model: str, s: UsageStats) -> tuple[str, ...]:
            cost = "-" if s.cost_usd is None else f"{s.cost_usd:.4f}"
            if s.unpriced_requests and s.cost_usd is not None:
                cost += "+?"
            return (
                role,
                model,
                str(s.calls),
                str(s.requests),
                str(s.cache_hits),
                str(s.cache_misses),
                str(s.prompt_tokens),
                str(s.completion_tokens),
                cost,
                str(s.invalid_outputs),
            )

        for role in sorted(self.roles, key=lambda r: (ROLES.index(r) if r in ROLES else len(ROLES), r)):
            for model, s in sorted(self.roles[role].models.items()):
                rows.append(row(role, model, s))
        if len(rows) > 1:
            rows.append(row("total", "", self.total()))
        widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)]

        def fmt(r: tuple[str, ...]) -> str:
            return "  ".join(
                c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
            )

        lines = [fmt(head).rstrip()] + [fmt(r).rstrip() for r in rows]
        lines.append(self.cache.summary())
        return lines

    def summary_lines(self) -> list[str]:
        t = self.total()
        cost = "cost unknown" if t.cost_usd is None else f"${t.cost_usd:.4f}"
        first = (
            f"LLM: {t.calls} calls, {t.requests} requests ({t.retries} retries), "
            f"{t.prompt_tokens + t.completion_tokens} tokens, {cost}, {t.invalid_outputs} invalid outputs"
        )
        if t.batched or t.batch_fallbacks:
            first += f"; {t.batched} requests through the batch API, {t.batch_fallbacks} sent directly after a batch fell back"
        return [first, *self.table(), *self.notes]


def check_role(role: str) -> None:
    """An unknown LLM role is a configuration error naming the known ones."""
    if role not in ROLES:
        from ..core.errors import LLMConfigError

        raise LLMConfigError(f"unknown LLM role {role!r}, expected one of {', '.join(ROLES)}")
