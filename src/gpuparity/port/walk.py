"""Find the files to port under SRC, refusing anything unsafe or unreadable.

Input is only ever read as bytes and decoded; nothing is executed. A skipped file or folder
is listed with its reason: symlinks that lead out of SRC, special files, files over 10 MB,
binary files, entries that cannot be read (permissions), and files that are not
C/C++/CUDA/CMake sources. Bytes that are not UTF-8 (a Latin-1 name in a comment) are kept
as surrogate escapes and written back as they were, so such files are ported too.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from gpuparity.port.cmake import is_cmake_file
from gpuparity.port.translate import SOURCE_SUFFIXES

MAX_BYTES = 10 * 1024 * 1024
_SNIFF_BYTES = 8192
_IGNORED_DIRS = {".git", ".hg", ".svn", "__pycache__"}


def decode_source(data: bytes) -> str:
    """Source text from bytes: UTF-8, with any other byte kept as a surrogate escape
    (encode with errors="surrogateescape" to get the same bytes back)."""
    return data.decode("utf-8", "surrogateescape")


def shown(text: str) -> str:
    """A name or line fit to show (terminal, HTML, JSON): bytes that were not UTF-8 (file
    names are decoded with surrogate escapes too) appear as \\xNN."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


@dataclass
class SourceFile:
    path: Path  # where to read it (may be a symlink inside SRC)
    rel: str  # path relative to SRC, with '/' separators
    language: str  # 'cuda' (C/C++/CUDA) or 'cmake'
    text: str


@dataclass
class Skip:
    rel: str
    reason: str


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def language_of(name: str) -> str | None:
    if is_cmake_file(name):
        return "cmake"
    if name.lower().endswith(SOURCE_SUFFIXES):
        return "cuda"
    return None


def read_source(path: Path, rel: str, root_real: str) -> SourceFile | Skip:
    """Safety checks for one file, then its text."""
    try:
        if path.is_symlink():
            target = os.path.realpath(path)
            if not _inside(target, root_real):
                return Skip(rel, "symlink leads outside SRC (not followed)")
            if not os.path.exists(target):
                return Skip(rel, "broken symlink")
        st = os.stat(path)
    except OSError as exc:
        return Skip(rel, f"unreadable: {exc.strerror or exc}")
    if not stat.S_ISREG(st.st_mode):
        return Skip(rel, "not a regular file")
    if st.st_size > MAX_BYTES:
        return Skip(rel, f"larger than 10 MB ({st.st_size // (1024 * 1024)} MB)")
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        return Skip(rel, f"unreadable: {exc.strerror or exc}")
    if b"\0" in data[:_SNIFF_BYTES]:
        return Skip(rel, "binary file")
    language = language_of(path.name)
    if language is None:
        return Skip(rel, "not a C/C++/CUDA or CMake source")
    return SourceFile(path, rel, language, decode_source(data))


def find_sources(src: Path) -> tuple[list[SourceFile], list[Skip]]:
    """All portable sources under src (a folder or one file), sorted by relative path."""
    files: list[SourceFile] = []
    skips: list[Skip] = []
    root_real = os.path.realpath(src)
    if not src.is_dir():
        got = read_source(src, src.name, os.path.dirname(root_real))
        (files if isinstance(got, SourceFile) else skips).append(got)
        return files, skips

    def unreadable(exc: OSError) -> None:  # os.walk skips a folder it cannot list: say so
        where = Path(exc.filename) if exc.filename else src
        try:
            rel = where.relative_to(src).as_posix() if where != src else "."
        except ValueError:
            rel = str(where)
        skips.append(Skip(rel + "/", f"unreadable folder: {exc.strerror or exc}"))

    for dirpath, dirnames, filenames in os.walk(src, followlinks=False, onerror=unreadable):
        base = Path(dirpath)
        keep = []
        for d in sorted(dirnames):
            full = base / d
            rel = full.relative_to(src).as_posix()
            if d in _IGNORED_DIRS:
                continue
            try:
                is_link = full.is_symlink()
            except OSError as exc:
                skips.append(Skip(rel + "/", f"unreadable folder: {exc.strerror or exc}"))
                continue
            if is_link:
                target = os.path.realpath(full)
                reason = ("symlink leads outside SRC (not followed)" if not _inside(target, root_real)
                          else "symlinked folder (not followed, to avoid loops)")
                skips.append(Skip(rel + "/", reason))
                continue
            keep.append(d)
        dirnames[:] = keep
        for name in sorted(filenames):
            full = base / name
            got = read_source(full, full.relative_to(src).as_posix(), root_real)
            (files if isinstance(got, SourceFile) else skips).append(got)
    files.sort(key=lambda f: f.rel)
    skips.sort(key=lambda s: s.rel)
    return files, skips
