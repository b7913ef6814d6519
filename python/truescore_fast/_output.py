"""Writing an output file safely: one path for every file the package writes (the
command line's ``-o``, ``--report``, ``--plot``, a study's ``--checkpoint``, the library's
``write_report`` and ``plot_heatmap``). Standard library only: the command line imports it
before NumPy. Not a public API.

The rules, the same for every file:

- the path is checked before any work (:func:`check_output_path`): its suffix, that it
  is not a directory, not a symbolic link to nothing, and that its folder exists, so a
  long audit is not run for an output it cannot write;
- a regular file (or a new one) is written to a new temporary file in the same folder and
  renamed over the path only once the whole content is on disk: a failed write, an error
  or Ctrl-C leaves the previous file as it was and no partial file; a hard link to the
  old file keeps the old content (the path gets a new file, the other name is not
  written through);
- a symbolic link of the user's own (or root's) to an existing file is followed, as the
  shell's ``>`` does, and the file it names is replaced as above (the link stays); a link
  owned by another user is refused (one planted in a shared folder: Linux's
  ``fs.protected_symlinks`` rule, applied in every folder), and so is a link to nothing,
  since creating whatever file a link names is how a planted link redirects a write;
- a checkpoint is appended to where it is (each record as it is saved), never replaced:
  it must be a regular file of one name (a hard-linked one is refused: the appends
  would reach the other name) or a new one, with the same rules for links;
- a FIFO or a device (``/dev/null``, ``/dev/full``, ``/dev/stdout``) is written directly,
  never replaced, and a failed write is an error (exit 1 at the command line).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator, Sequence
from typing import IO, Any

__all__ = ["check_checkpoint_path", "check_output_path", "file_kind", "output_file"]


def check_output_path(
    path: str | os.PathLike[str], *, flag: str, suffixes: Sequence[str] = ()
) -> str:
    """``path`` as a str, checked before any work: a ValueError starting with ``flag``
    when its suffix is not one of ``suffixes`` (any when empty), when it is a directory
    or a symbolic link to nothing, or when its folder does not exist or is one this
    process may not create a file in."""
    text = os.fspath(path)
    if not isinstance(text, str):
        raise TypeError(f"{flag} must be a str or path; got bytes")
    if suffixes and os.path.splitext(text)[1].lower() not in suffixes:
        *rest, last = suffixes
        listed = f"{', '.join(rest)} or {last}" if rest else last
        raise ValueError(
            f"{flag} must name a {listed} file (the suffix picks the format); got {text!r}"
        )
    _output_target(text, flag)
    return text


def file_kind(mode: int) -> str:
    """What a path that is not a regular file is, from its ``st_mode``, for a message."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a socket" if stat.S_ISSOCK(mode) else "not a regular file"


def check_checkpoint_path(path: str | os.PathLike[str], *, flag: str) -> str:
    """``path`` as a str, checked as a checkpoint file, which is appended to where it is
    (each record as it is saved, so Ctrl-C keeps them), not replaced: a regular file or
    nothing yet (in a folder that exists), or a symbolic link to a regular file. A
    directory, a FIFO, a device, a symbolic link to nothing, a file this process may not
    read and write, or a new file in a folder it may not create one in is a ValueError
    starting with ``flag``."""
    text = os.fspath(path)
    if not isinstance(text, str):
        raise TypeError(f"{flag} must be a str or path; got bytes")
    _check_link(text, flag)
    try:
        info = os.stat(text)  # through any link
    except FileNotFoundError:
        folder = os.path.dirname(os.path.abspath(text))
        if not os.path.islink(text) and not os.path.isdir(folder):  # an OSError, as open's
            raise FileNotFoundError(
                f"{flag} {text} cannot be written: its folder {folder} does not exist"
            ) from None
        _writable_folder(_new_file(text, flag), text, flag)
        return text
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(
            f"{flag} {text} is {file_kind(info.st_mode)}, not a file: name a regular file "
            "(or a new one)"
        )
    if info.st_nlink > 1:  # appending would write through to its other names
        raise ValueError(
            f"{flag}: {text} has {info.st_nlink} names (hard links); a checkpoint is "
            "appended to where it is: name a file of its own"
        )
    if not _may(text, os.R_OK | os.W_OK):  # read back, then appended to
        raise ValueError(f"{flag}: cannot write {text}: no permission to read and write it")
    return text


# Paths that name an open file or a device through the kernel's own links
# (/dev/stdout -> /proc/self/fd/1 -> a pipe, a terminal or the shell's file): written as
# they are, never resolved and replaced.
_KERNEL_PATHS = ("/dev/", "/proc/")


@contextlib.contextmanager
def output_file(
    path: str | os.PathLike[str], *, flag: str, binary: bool = False
) -> Iterator[IO[Any]]:
    """A handle to write the output file ``path`` through (text UTF-8 with ``\\n`` line
    ends, or bytes with ``binary``).

    - Nothing at ``path``, or a regular file: the content goes to a new temporary file
      made by :func:`tempfile.mkstemp` (a unique name, created exclusively, never
      through a link) in the same directory, is flushed to disk and then renamed over
      ``path`` (:func:`os.replace`), so an error or Ctrl-C leaves the old file as it was
      and no temporary file behind. The new file keeps a replaced file's permissions
      (a new one gets the umask's).
    - A symbolic link: followed to the end (:func:`os.path.realpath`), and the file it
      names is replaced as above; the link itself stays. A link to nothing is refused
      (the module docstring says why).
    - A FIFO, a device (``/dev/null``, ``/dev/full``), a socket, or any path under
      ``/dev`` or ``/proc`` (``/dev/stdout``, ``/dev/fd/3``): opened and written
      directly, never replaced.

    Raises:
        ValueError: ``path`` is a directory or a symbolic link to nothing, or cannot be
            written (the message starts with ``flag`` and names ``path``).
    """
    path = check_output_path(path, flag=flag)
    try:
        target, replace = _output_target(path, flag)
        if replace:
            with _replacing(target, binary) as handle:
                yield handle
        else:
            with open(target, "wb" if binary else "w", **_text(binary)) as handle:
                yield handle
    except OSError as error:
        raise ValueError(f"{flag}: cannot write {path}: {error.strerror or error}") from None


def _text(binary: bool) -> dict[str, Any]:
    return {} if binary else {"encoding": "utf-8", "newline": "\n"}


def _check_link(path: str, flag: str) -> None:
    """Refuse ``path`` when it is a symbolic link owned neither by this user nor by its
    folder's owner: one planted in a shared folder (Linux's ``fs.protected_symlinks``
    refuses to follow these in sticky world-writable folders; here, in any folder)."""
    geteuid = getattr(os, "geteuid", None)
    if geteuid is None or not os.path.islink(path):
        return
    owner = os.lstat(path).st_uid
    folder_owner = os.stat(os.path.dirname(os.path.abspath(path))).st_uid
    if owner not in (geteuid(), folder_owner):
        raise ValueError(
            f"{flag}: {path} is a symbolic link owned by another user (uid {owner}): not "
            "followed; name the file itself"
        )


def _output_target(path: str, flag: str) -> tuple[str, bool]:
    """(the path to open, whether to replace it through a temporary file)."""
    if os.path.abspath(path).startswith(_KERNEL_PATHS):
        if os.path.isdir(path):
            raise ValueError(f"{flag}: {path} is a directory; name a file")
        return path, False
    _check_link(path, flag)
    try:
        mode = os.stat(path).st_mode  # through any link
    except FileNotFoundError:  # nothing there, or a link to nothing
        return _writable_folder(_new_file(path, flag), path, flag), True
    if stat.S_ISDIR(mode):
        raise ValueError(f"{flag}: {path} is a directory; name a file")
    if stat.S_ISREG(mode):  # replaced by a new file made in its folder
        return _writable_folder(os.path.realpath(path), path, flag), True
    return path, False  # a FIFO, a device or a socket


def _may(path: str, mode: int) -> bool:
    """Whether this process may ``mode`` (``os.W_OK``...) ``path``, by its effective ids
    where the platform tells them apart (a set-uid program; root without the capability
    to override permissions is refused, as its writes would be)."""
    effective = os.access in os.supports_effective_ids
    return os.access(path, mode, effective_ids=effective)


def _writable_folder(target: str, path: str, flag: str) -> str:
    """``target``, once its folder is one this process may create a file in (the output
    is written to a temporary file there and renamed over ``target``): checked before
    any work, so a folder without write permission is one line at once, not after the
    work is done."""
    folder = os.path.dirname(target)
    if not _may(folder, os.W_OK | os.X_OK):
        raise ValueError(
            f"{flag}: cannot write {path}: no permission to create a file in its folder {folder}"
        )
    return target


def _new_file(path: str, flag: str) -> str:
    """The file to create for ``path``, where nothing is: refused when ``path`` is a
    symbolic link to nothing, or when its folder does not exist."""
    if os.path.islink(path):
        raise ValueError(
            f"{flag}: {path} is a symbolic link to nothing ({os.readlink(path)}); name the "
            "file itself, or remove the link"
        )
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValueError(f"{flag}: cannot write {path}: its folder {folder} does not exist")
    return os.path.realpath(path)


@contextlib.contextmanager
def _replacing(target: str, binary: bool) -> Iterator[IO[Any]]:
    import tempfile  # here: --help and --version need none of it

    directory, name = os.path.split(target)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    descriptor, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    try:
        with open(descriptor, "wb" if binary else "w", **_text(binary)) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    with contextlib.suppress(OSError):  # the rename itself on disk (not every system can)
        directory_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(directory_fd)
        finally:
            os.close(directory_fd)


def _umask() -> int:
    """This process's umask, read without changing it where Linux shows it."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
