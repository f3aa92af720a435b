"""User roles (personas) of the Conversation Generator, kept as YAML data files.

A role file holds one mapping::

    name: referrer            # optional; defaults to the file's stem
    description: one line for reports
    instructions: the persona text put into the generator's prompt
    version: "1"              # optional; part of the cache key of its calls
    attack:                   # optional: an adversarial role (docs/safety.md)
      family: policy
      markers: []             # texts only an obedient answer states

The built-in library lives in ``pytest_ragdive/roles/`` (``default``,
``referrer``, ``confused``, ``verbose``, and the adversarial ``attacker_instructions``,
``attacker_personal_data``, ``attacker_policy``, ``attacker_off_domain``,
``attacker_persistent``). Users add or override roles with
files in extra directories (typically a ``roles/`` directory beside their
config); a later directory wins over an earlier one and over the built-ins.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..attacks.records import AttackFamily, AttackTurn
from ..core.errors import RoleError, fmt_loc, one_line

BUILTIN_ROLE_DIR = Path(__file__).resolve().parent.parent / "roles"
ROLE_SUFFIXES = (".yaml", ".yml")


class RoleAttack(BaseModel):
    """What an adversarial role attacks (docs/safety.md): its family, and the markers and
    forbidden commitments its conversations are checked for (canaries come from the suite)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    family: AttackFamily
    markers: list[str] = Field(default_factory=list)
    forbidden: list[str] = Field(default_factory=list)

    def turn(self) -> AttackTurn:
        return AttackTurn(family=self.family, framing="persona", markers=list(self.markers),
                          forbidden=list(self.forbidden))


class Role(BaseModel):
    """One simulated user persona."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    instructions: str = Field(min_length=1)
    # part of every simulator and validator call's cache key (with the prompt's own version):
    # editing a versioned role means bumping it; a role without one is keyed by its text alone
    version: str | None = Field(None, pattern=r"^[A-Za-z0-9_.-]{1,20}$")
    attack: RoleAttack | None = None  # an adversarial role: its conversations carry the attack checks

    def prompt_version(self, prompt_version: str) -> str:
        """The version a call of this role is cached under: the prompt's, plus the role's own."""
        return prompt_version if self.version is None else f"{prompt_version}+{self.name}@{self.version}"


def _role_files(dirs: Iterable[Path]) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for d in dirs:
        if not d.is_dir():
            continue
        for p in sorted(d.iterdir()):
            if p.suffix in ROLE_SUFFIXES and p.is_file():
                found[p.stem] = p
    return found


def _search_dirs(extra_dirs: Iterable[str | Path]) -> list[Path]:
    dirs = [BUILTIN_ROLE_DIR]
    for d in extra_dirs:
        p = Path(d).expanduser()
        if p.exists() and not p.is_dir():
            raise RoleError(f"role directory {p} is not a directory")
        dirs.append(p)
    return dirs


def available_roles(extra_dirs: Iterable[str | Path] = ()) -> dict[str, Path]:
    """Role name -> file, built-ins first, extra directories overriding them."""
    return _role_files(_search_dirs(extra_dirs))


def load_role_file(path: Path) -> Role:
    """Read one role file; the name defaults to the file's stem and must match it."""
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise RoleError(f"role file {path}: cannot read: {' '.join(str(e).split())}") from None
    if not isinstance(data, dict):
        raise RoleError(f"role file {path}: expected a mapping with 'instructions', got {type(data).__name__}")
    data.setdefault("name", path.stem)
    if data["name"] != path.stem:
        raise RoleError(f"role file {path}: name {data['name']!r} does not match the file name {path.stem!r}")
    try:
        return Role.model_validate(data)
    except ValidationError as e:
        raise RoleError(f"role file {path}: {one_line(e, label=lambda loc: f'key {fmt_loc(loc)!r}')}") from None


def load_roles(names: Iterable[str], extra_dirs: Iterable[str | Path] = ()) -> list[Role]:
    """The roles named, in order; an unknown name raises :class:`RoleError` listing the available ones."""
    files = available_roles(extra_dirs)
    names = list(names)
    if not names:
        raise RoleError("no roles selected: give at least one role name")
    out: list[Role] = []
    for name in names:
        path = files.get(name)
        if path is None:
            raise RoleError(f"unknown role {name!r}, available roles: {', '.join(sorted(files)) or '(none)'}")
        out.append(load_role_file(path))
    return out
