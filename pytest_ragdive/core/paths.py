"""Can the run read and write where it was told to?

:func:`check_writable` looks at the report directory and the baseline path
(only when a baseline will be written) and raises
:class:`~pytest_ragdive.errors.PathError` (a usage error: exit code 4) with one
line naming the path, the setting and what is wrong, so that a paid run does
not end in a traceback. It creates nothing: it probes the nearest existing
directory with a temporary file that it removes at once.

:func:`read_text` reads a data file as UTF-8; bytes that are not UTF-8 raise
the caller's usage error naming the file, line and column.

:func:`atomic_open` writes a file so that a reader (or a run killed halfway)
never sees half of it: a temporary file in the same directory, renamed into place. The
rename replaces a symbolic link at the path, never the file it points to; and no write
goes inside a ``.git`` folder (:func:`refuse_inside_git`: a usage error, exit 4).
"""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from .errors import PathError, UsageError


def check_writable(report_dir: Path | None = None, baseline: Path | None = None) -> None:
    """Raise PathError unless the reports and the baseline can be written.

    ``report_dir``: the directory results.json and the other reports go to
    (may not exist yet). ``baseline``: the baseline file about to be written
    (``--ragdive-update-baseline``; leave None when the run only reads it).
    """
    if report_dir is not None:
        what = f"cannot write reports to {report_dir} (--ragdive-report-dir / report_dir)"
        refuse_inside_git(report_dir, what, folder=True)
        if report_dir.exists() and not report_dir.is_dir():
            raise PathError(f"ragdive {what}: it is a file, not a directory")
        _check_dir(report_dir, what)
    if baseline is not None:
        what = f"cannot write the baseline {baseline} (--ragdive-baseline / baseline)"
        refuse_inside_git(baseline, what)
        if baseline.is_dir():
            raise PathError(f"ragdive {what}: it is a directory; name a file such as {baseline / 'baseline.json'}")
        if baseline.exists() and not baseline.is_symlink():  # a link is replaced, never written through
            _probe_file(baseline, what)
        _check_dir(baseline.parent, what)


def inside_git(path: Path, *, folder: bool = False) -> bool:
    """Whether writing ``path`` (a file; ``folder``: a directory) would write inside a ``.git``
    folder: as written, or where its folder's links lead (the file itself, a link, is replaced)."""
    lexical = Path(os.path.abspath(path))
    real = Path(os.path.realpath(lexical if folder else lexical.parent))
    return any(part.lower() == ".git" for part in (*lexical.parts, *real.parts))


def refuse_inside_git(path: Path, what: str = "", *, folder: bool = False) -> None:
    """Raise :class:`PathError` (one line, exit 4) when ``path`` lies inside a ``.git`` folder."""
    if inside_git(path, folder=folder):
        what = what or f"cannot write {path}"
        raise PathError(f"ragdive {what}: it is inside a .git folder, which the plugin never writes")


def _check_dir(directory: Path, what: str) -> None:
    """The nearest existing ancestor of ``directory`` is a directory we can create files in."""
    existing = directory
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        raise PathError(f"ragdive {what}: {existing} is a file, not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".ragdive-probe-", dir=existing)
    except OSError as e:
        raise PathError(f"ragdive {what}: {existing} is not writable ({_why(e)})") from None
    os.close(fd)
    os.unlink(probe)


def _probe_file(path: Path, what: str) -> None:
    if not os.access(path, os.W_OK):
        raise PathError(f"ragdive {what}: the file is read-only")
    try:
        with open(path, "ab"):  # opens for writing, changes nothing
            pass
    except OSError as e:
        raise PathError(f"ragdive {what}: {_why(e)}") from None


def _why(e: OSError) -> str:
    return e.strerror or errno.errorcode.get(e.errno or 0, str(e))


def read_text(path: Path, error: type[UsageError] = UsageError) -> str:
    """The file's text; ``error("FILE:LINE: not UTF-8 text ...")`` when it is not UTF-8."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise error(
            f"{path}:{line}: not UTF-8 text (byte 0x{data[e.start]:02x} at column {column}); save the file as UTF-8"
        ) from None


#: the most a JSON input read whole (a baseline, a results file) may hold
MAX_INPUT_BYTES = 512 * 2**20


def read_input(path: Path, what: str, error: type[UsageError], missing: str) -> str:
    """The text of an input file the plugin names as ``what`` ("ragdive baseline"); every
    way it cannot be read is one ``error`` line that starts with ``what``: not there
    (``missing`` follows the path: how to make it), over :data:`MAX_INPUT_BYTES`, not
    UTF-8 (its line, column and byte: :func:`read_text`), or unreadable (the system's reason)."""
    if not path.is_file():
        raise error(f"{what} {path} not found{missing}")
    try:
        size = path.stat().st_size
    except OSError:
        size = 0  # said below, by the read
    if size > MAX_INPUT_BYTES:
        raise error(
            f"{what} {path} is {size / 2**20:.0f} MB, over the {MAX_INPUT_BYTES >> 20} MB an input file may hold: "
            f"is it the right file?"
        )
    try:
        return read_text(path, error)
    except error as e:
        raise error(f"{what} {e}") from None
    except OSError as e:
        raise error(f"{what} {path} cannot be read: {str(e).splitlines()[0]}") from None


@contextmanager
def atomic_open(path: Path, newline: str | None = None) -> Iterator[TextIO]:
    """A UTF-8 text file that replaces ``path`` when the block ends without an error:
    written to a unique temporary file beside it (``.NAME.*.tmp``; concurrent writers
    never clash), synced, then renamed into place; removed on an error. The same bytes
    as ``open(path, "w", encoding="utf-8")`` would write. A symbolic link at ``path`` is
    replaced by the file (the file it pointed to is left as it was); a path inside ``.git``
    raises :class:`PathError`."""
    refuse_inside_git(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline=newline) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes the file private; a report is an ordinary file
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
