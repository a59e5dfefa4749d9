"""Find the files to port under SRC, refusing anything unsafe or unreadable.

Input is only ever read as bytes and decoded; nothing is executed. A skipped file is listed
with its reason: symlinks that lead out of SRC, special files, files over 10 MB, binary and
non-UTF-8 files, and files that are not C/C++/CUDA/CMake sources.
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
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Skip(rel, f"not UTF-8 text (bad byte at offset {exc.start})")
    return SourceFile(path, rel, language, text)


def find_sources(src: Path) -> tuple[list[SourceFile], list[Skip]]:
    """All portable sources under src (a folder or one file), sorted by relative path."""
    files: list[SourceFile] = []
    skips: list[Skip] = []
    root_real = os.path.realpath(src)
    if not src.is_dir():
        got = read_source(src, src.name, os.path.dirname(root_real))
        (files if isinstance(got, SourceFile) else skips).append(got)
        return files, skips
    for dirpath, dirnames, filenames in os.walk(src, followlinks=False):
        base = Path(dirpath)
        keep = []
        for d in sorted(dirnames):
            full = base / d
            rel = full.relative_to(src).as_posix()
            if d in _IGNORED_DIRS:
                continue
            if full.is_symlink():
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
