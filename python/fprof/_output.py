"""How the package writes on its user's behalf, by the same rules as the fprof command's writers
(docs/outputs.md): never replace a file or folder it was not told to (--force), never an input
(nor a folder holding one), never leave half an output: everything is written under a temporary
name beside the target and renamed into place once complete.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import sys
import tempfile

from ._core import FprofError


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _inside(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or lies inside it, whatever links name them."""
    real_path, real_folder = os.path.realpath(path), os.path.realpath(folder)
    return real_path == real_folder or real_path.startswith(real_folder.rstrip(os.sep) + os.sep)


def _cause(err: OSError) -> str:
    return (err.strerror or str(err)).lower()


def check_standard_output_is_no_input(inputs, what: str) -> None:
    """Standard output redirected onto an input (`fprof job ranks/ -o job >> ranks/rank0.fprof`)
    would write into a file being read: refused before the work, as the fprof command does."""
    try:
        out = os.fstat(1)
    except OSError:
        return
    if not stat.S_ISREG(out.st_mode):
        return
    for source in inputs:
        try:
            s = os.stat(source)
        except OSError:
            continue
        if (s.st_dev, s.st_ino) == (out.st_dev, out.st_ino):
            raise FprofError(f"standard output is the input {source} (redirected onto it); write {what} to another "
                             "file")


def write_standard_output(text: str) -> None:
    """Writes to standard output, flushed, a failure (a full disk behind a redirection, a closed
    pipe) raised as FprofError with the system's cause: exit 2, as the fprof command's writes."""
    if sys.stdout is None:  # started with standard output closed
        raise FprofError(f"standard output: {os.strerror(errno.EBADF).lower()}")
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except OSError as err:
        raise FprofError(f"standard output: {_cause(err)}") from err


def check_output_file(path: str, force: bool, inputs=(), what: str = "the output") -> None:
    """The checks a file output must pass before the work that fills it."""
    if not path:
        raise FprofError(f"no path given for {what}")
    if os.path.isdir(path):
        raise FprofError(f"{path}: is a directory; {what} is a file")
    for source in inputs:
        if _same_file(path, source):
            raise FprofError(f"{path}: is one of the inputs; {what} must go elsewhere")
    if os.path.lexists(path) and not force and not _is_stream(path):
        raise FprofError(f"{path}: exists; --force replaces it")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise FprofError(f"{path}: the folder {parent} does not exist")


def _is_stream(path: str) -> bool:
    """A character device or FIFO (/dev/null, a process substitution): written in place."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def write_text(path: str, text: str, force: bool, inputs=(), what: str = "the output") -> None:
    """Writes `text` to `path` whole or not at all (see the module's rules)."""
    check_output_file(path, force, inputs, what)
    data = text.encode("utf-8", errors="replace")
    if _is_stream(path):
        with open(path, "wb") as f:
            f.write(data)
        return
    folder = os.path.dirname(os.path.abspath(path))
    fd, temp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".fprof-tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        _place(temp, path, force)
    except OSError as err:
        raise FprofError(f"{path}: cannot write {what}: {_cause(err)}") from None
    finally:
        if os.path.lexists(temp):
            os.unlink(temp)


def _place(temp: str, path: str, replace: bool) -> None:
    if replace:
        os.replace(temp, path)
        return
    # Without --force, an exclusive placement: of two writers racing for one path exactly one
    # wins, and the other fails without touching the winner's file.
    try:
        os.link(temp, path)
    except FileExistsError:
        raise FprofError(f"{path}: exists; --force replaces it") from None
    os.unlink(temp)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class OutputFolder:
    """A folder of outputs (a job folder), filled under a temporary name beside the target and
    put in place by commit(); discarded if anything fails before. With `force`, an existing
    folder is replaced only once the new one is complete."""

    def __init__(self, path: str, force: bool, inputs=(), what: str = "the job folder"):
        self.target = os.path.abspath(path)
        self.force = force
        self.what = what
        if os.path.lexists(self.target):
            if not os.path.isdir(self.target):
                raise FprofError(f"{path}: exists and is not a folder; {what} is a folder")
            if not force:
                raise FprofError(f"{path}: exists; --force replaces it")
        for source in inputs:
            if _inside(source, self.target):
                raise FprofError(f"{path}: holds the input {source}; {what} must go elsewhere")
        parent = os.path.dirname(self.target)
        if not os.path.isdir(parent):
            raise FprofError(f"{path}: the folder {parent} does not exist")
        try:
            self.path = tempfile.mkdtemp(prefix=f".{os.path.basename(self.target)}.", suffix=".fprof-tmp", dir=parent)
            os.chmod(self.path, 0o777 & ~_umask())  # a folder like mkdir makes, not mkdtemp's private one
        except OSError as err:
            raise FprofError(f"{path}: cannot write {what}: {_cause(err)}") from None

    def file(self, name: str) -> str:
        return os.path.join(self.path, name)

    def commit(self) -> None:
        old = None
        try:
            if os.path.lexists(self.target):
                if not self.force:
                    raise FprofError(f"{self.target}: exists; --force replaces it")
                old = tempfile.mkdtemp(prefix=f".{os.path.basename(self.target)}.", suffix=".fprof-old",
                                       dir=os.path.dirname(self.target))
                os.rename(self.target, os.path.join(old, "previous"))
            os.rename(self.path, self.target)
        except OSError as err:
            if old and not os.path.lexists(self.target):
                os.rename(os.path.join(old, "previous"), self.target)  # the old folder back as it was
            raise FprofError(f"{self.target}: cannot write {self.what}: {_cause(err)}") from None
        finally:
            if old:
                shutil.rmtree(old, ignore_errors=True)

    def discard(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        if os.path.isdir(self.path):
            self.discard()
        return False
