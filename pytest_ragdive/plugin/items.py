"""The pytest items: one per planned conversation, under a module node that
stands for the ragdive config file (so conftest fixtures beside it apply)."""

from __future__ import annotations

import types
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..run.planning import Plan

if TYPE_CHECKING:
    from .session import RagdiveSession


def _ragdive_conversation_item(request: pytest.FixtureRequest, ragdive_target: Any) -> None:
    """Run one planned conversation against the target and score it."""
    item = request.node
    assert isinstance(item, RagdiveItem)
    sess = item.ragdive_session
    conv = sess.result_for(item.plan, ragdive_target, item)
    sess.hand_over(item, conv)  # to the role's makereport (not an attribute of the item: it would outlive it)
    sess.fail_if_broken(conv)


class RagdiveModule(pytest.Module):
    """Stands for the config file; one child node per suite."""

    plans: list[Plan]
    ragdive_session: RagdiveSession

    def setup_plans(self, sess: RagdiveSession, plans: list[Plan]) -> None:
        self.ragdive_session = sess
        self.plans = plans

    def _getobj(self) -> types.ModuleType:
        return types.ModuleType(f"ragdive_{self.path.stem}")

    def collect(self) -> list[pytest.Item | pytest.Collector]:
        suites: dict[str, list[Plan]] = {}
        for plan in self.plans:
            suites.setdefault(plan.suite, []).append(plan)
        out: list[pytest.Item | pytest.Collector] = []
        for name, plans in suites.items():
            node = RagdiveSuite.from_parent(self, name=name)
            node.plans = plans
            node.ragdive_session = self.ragdive_session
            out.append(node)
        return out


class RagdiveSuite(pytest.Collector):
    """One suite (``core``, ``extended`` or any configured name); its items are the planned conversations."""

    plans: list[Plan]
    ragdive_session: RagdiveSession

    def collect(self) -> list[pytest.Item | pytest.Collector]:
        items: list[pytest.Item | pytest.Collector] = []
        for plan in self.plans:
            item = RagdiveItem.from_parent(self, name=plan.item_name, callobj=_ragdive_conversation_item)
            item.plan = plan
            item.ragdive_session = self.ragdive_session
            item.add_marker(f"ragdive_{plan.suite}")
            item.add_marker("ragdive")
            items.append(item)
        return items


class RagdiveItem(pytest.Function):
    plan: Plan
    ragdive_session: RagdiveSession

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"ragdive {self.plan.suite} {self.plan.conv_id} run {self.plan.run}"


def build_items(
    session: pytest.Session,
    config_file: Path,
    sess: RagdiveSession,
    plans: list[Plan],
    collected_dirs: dict[Path, pytest.Directory],
) -> list[pytest.Item]:
    """Items for a config file that pytest did not walk (other paths or
    ``testpaths`` were given).

    pytest scopes conftest fixtures to the Directory node that collected the
    conftest (or to the session for the rootdir's), so the items hang under
    that very node when pytest collected it; otherwise under Directory nodes
    made here, each collected through pytest's own hook so that it loads and
    scopes its conftest.py (and the ``ragdive_target`` fixture in it).
    """
    rootpath = session.config.rootpath
    cfg_dir = config_file.parent
    parent: Any = session
    if cfg_dir in collected_dirs:
        parent = collected_dirs[cfg_dir]
    elif cfg_dir != rootpath:
        try:
            chain = [rootpath.joinpath(*cfg_dir.relative_to(rootpath).parts[: i + 1])
                     for i in range(len(cfg_dir.relative_to(rootpath).parts))]
        except ValueError:  # outside the rootdir
            chain = [cfg_dir]
        for here in chain:
            node = collected_dirs.get(here)
            if node is None:
                node = pytest.Dir.from_parent(parent, path=here)
                node.ihook.pytest_make_collect_report(collector=node)  # loads its conftest.py
            parent = node
    module = RagdiveModule.from_parent(parent, path=config_file)
    module.setup_plans(sess, plans)
    return list(_items(module))


def _items(node: pytest.Collector) -> Iterator[pytest.Item]:
    for child in node.collect():
        if isinstance(child, pytest.Item):
            yield child
        else:
            yield from _items(child)
