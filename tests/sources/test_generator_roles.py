"""The role library: built-ins, user role dirs, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ragdive.sources.roles import Role, RoleError, available_roles, load_roles


def test_builtin_roles_load_in_order() -> None:
    roles = load_roles(["default", "referrer", "confused", "verbose"])
    assert [r.name for r in roles] == ["default", "referrer", "confused", "verbose"]
    assert all(isinstance(r, Role) and r.instructions and r.description for r in roles)
    assert "short" in roles[0].instructions and "precise" in roles[0].instructions
    assert "this" in roles[1].instructions and "it" in roles[1].instructions
    assert "wrong" in roles[2].instructions and "again" in roles[2].instructions


def test_unknown_role_lists_available() -> None:
    with pytest.raises(RoleError) as ei:
        load_roles(["default", "pirate"])
    msg = str(ei.value)
    assert "'pirate'" in msg and "confused, default, referrer, verbose" in msg
    assert "\n" not in msg


def test_user_role_dir_adds_and_overrides(tmp_path: Path) -> None:
    d = tmp_path / "roles"
    d.mkdir()
    (d / "pirate.yaml").write_text("description: Talks like a pirate.\ninstructions: Arr, ask like a pirate.\n")
    (d / "default.yml").write_text("name: default\ninstructions: Ask in German.\n")
    assert set(available_roles([d])) >= {"pirate", "default", "confused"}
    pirate, default = load_roles(["pirate", "default"], extra_dirs=[d])
    assert pirate.name == "pirate" and "pirate" in pirate.instructions
    assert default.instructions == "Ask in German."
    # a missing extra dir is fine (no roles/ beside the config)
    assert load_roles(["verbose"], extra_dirs=[tmp_path / "nope"])[0].name == "verbose"


@pytest.mark.parametrize(
    "content, needle",
    [
        ("name: other\ninstructions: x\n", "does not match"),
        ("description: no instructions\n", "instructions"),
        ("- a list\n", "mapping"),
        ("instructions: [unclosed\n", "cannot read"),
        ("instructions: x\ncolour: red\n", "colour"),
    ],
)
def test_bad_role_file_errors(tmp_path: Path, content: str, needle: str) -> None:
    (tmp_path / "bad.yaml").write_text(content)
    with pytest.raises(RoleError) as ei:
        load_roles(["bad"], extra_dirs=[tmp_path])
    assert needle in str(ei.value) and "bad.yaml" in str(ei.value)


def test_no_roles_selected() -> None:
    with pytest.raises(RoleError):
        load_roles([])
