"""The pytest items: one per planned conversation, under a module node that
stands for the ragdive config file (so conftest fixtures beside it apply)."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import pytest

from .planning import Plan


def _ragdive_conversation_item(request: pytest.FixtureRequest, ragdive_target: Any) -> None:
    """Run one planned conversation against the target and score it."""
    from .session import get_session

    item = request.node
    assert isinstance(item, RagdiveItem)
    sess = get_session(request.config)
    conv = sess.result_for(item.plan, ragdive_target, item)
    item.ragdive_result = conv
    sess.fail_if_broken(conv)


class RagdiveModule(pytest.Module):
    """Stands for the config file; its items are made from the plans."""

    plans: list[Plan]

    def _getobj(self) -> types.ModuleType:
        return types.ModuleType(f"ragdive_{self.path.stem}")

    def collect(self) -> list[pytest.Item]:
        items: list[pytest.Item] = []
        for plan in self.plans:
            item = RagdiveItem.from_parent(self, name=plan.name, callobj=_ragdive_conversation_item)
            item.plan = plan
            item.add_marker(f"ragdive_{plan.suite}")
            item.add_marker("ragdive")
            items.append(item)
        return items


class RagdiveItem(pytest.Function):
    plan: Plan
    ragdive_result: Any = None

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"ragdive {self.plan.suite} {self.plan.conv_id} run {self.plan.run}"


def build_items(
    session: pytest.Session, config_file: Path, plans: list[Plan], collected_dirs: dict[Path, pytest.Directory]
) -> list[pytest.Item]:
    """Items under the node that stands for the config file's directory, so
    that the conftest.py fixtures there (``ragdive_target``) are visible.

    pytest scopes conftest fixtures to the Directory node it collected (or to
    the session for the rootdir's conftest), so the items hang under that very
    node when pytest collected it; otherwise under Dir nodes of our own.
    """
    parent: Any = session
    rootpath = session.config.rootpath
    cfg_dir = config_file.parent
    if cfg_dir in collected_dirs:
        parent = collected_dirs[cfg_dir]
    elif cfg_dir != rootpath:
        try:
            parts = cfg_dir.relative_to(rootpath).parts
        except ValueError:
            parts = ()
        here = rootpath
        for part in parts:
            here = here / part
            parent = collected_dirs.get(here) or pytest.Dir.from_parent(parent, path=here)
    module = RagdiveModule.from_parent(parent, path=config_file)
    module.plans = plans
    return module.collect()
