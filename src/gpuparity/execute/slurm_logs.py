"""The files SLURM opens for a job `gpuparity submit` writes, and the check that none of them is
the store: the job's log (--output, --error) and its stdin (--input), as the script, a --sbatch
option (any prefix sbatch's getopt takes: --out=, --err=) or sbatch's environment (SBATCH_OUTPUT,
SBATCH_ERROR, SBATCH_INPUT: these override the script) name them, relative to the job's
--chdir or the folder sbatch runs in. SLURM's filename patterns (sbatch(1) "filename pattern")
are expanded where their value is known here (%x: each job name the job could have, %%: %) and
matched as any name where not (%j, %A, %a, %N, %u, ...: a job id or node known only later), so
a pattern that could ever name the store, or its -wal, -shm or -journal file, by any alias (a
symlink, `..`, a bind mount of its folder, a hard link), is refused.
"""

from __future__ import annotations

import os
import re

from gpuparity.errors import UserError

FILE_OPTIONS = ("output", "error", "input")
ENVIRONMENT = ("SBATCH_OUTPUT", "SBATCH_ERROR", "SBATCH_INPUT")
_ANY = "\0"            # a replacement symbol whose value is unknown here: stands for any name
_SYMBOL = re.compile(r"%%|%\d*[A-Za-z]|[^%]+|%")


def _takes(option: str, typed: str) -> bool:
    """Whether sbatch reads --TYPED as --OPTION (getopt_long takes any unambiguous prefix)."""
    return bool(typed) and option.startswith(typed)


def _given(extra: list[str], option: str) -> list[tuple[str, str]]:
    """(the option as typed, its value) of each --sbatch option that sbatch reads as --OPTION."""
    out = []
    for opt in extra:
        typed, eq, value = opt[2:].partition("=")
        if eq and _takes(option, typed):
            out.append((f"--sbatch=--{typed}", value))
    return out


def _values(extra: list[str], option: str) -> list[str]:
    return [value for _, value in _given(extra, option)]


def job_files(spec, environ=None) -> list[tuple[str, str]]:
    """(where it was named, pattern) of every file SLURM opens for the job's output, error and input."""
    environ = os.environ if environ is None else environ
    default = "gpuparity-%A_%a.out" if spec.array else "gpuparity-%j.out"
    out = [("--output", spec.output or default)]
    out += [given for option in FILE_OPTIONS for given in _given(spec.extra, option)]
    out += [(name, environ[name]) for name in ENVIRONMENT if environ.get(name)]
    return out


def expand(pattern: str, job_names: list[str]) -> list[str]:
    """The pattern with %x as each job name and %% as %; other symbols as _ANY (a backslash
    turns every symbol off: then the pattern is taken as written, and without its backslashes)."""
    if "\\" in pattern:
        return list(dict.fromkeys((pattern, pattern.replace("\\", ""))))
    out = []
    for name in job_names:
        parts = []
        for m in _SYMBOL.finditer(pattern):
            token = m.group()
            if token == "%%":
                parts.append("%")
            elif token.startswith("%") and token[-1] == "x":
                parts.append(name)
            elif token.startswith("%") and len(token) > 1:
                parts.append(_ANY)
            else:
                parts.append(token)
        out.append("".join(parts))
    return list(dict.fromkeys(out))


def _hits(path: str, protect: list[tuple[str, str]]) -> str | None:
    """What of `protect` an absolute, expanded path could be (None: nothing)."""
    from gpuparity.validate import same_file, same_folder

    folder, name = os.path.split(path)
    for what, other in protect:
        other_abs = os.path.abspath(other)
        if _ANY not in path:
            if same_file(path, other_abs):
                return what
            continue
        names = [os.path.basename(other_abs), os.path.basename(os.path.realpath(other_abs))]
        if _ANY not in folder:          # only the name is a pattern: the folder compared as a folder
            rx = re.compile("[^/]*".join(map(re.escape, name.split(_ANY))))
            if any(rx.fullmatch(n) for n in names) and (
                    same_folder(folder, os.path.dirname(other_abs))
                    or same_folder(folder, os.path.dirname(os.path.realpath(other_abs)))):
                return what
        else:
            rx = re.compile("[^/]*".join(map(re.escape, path.split(_ANY))))
            if rx.fullmatch(other_abs) or rx.fullmatch(os.path.realpath(other_abs)):
                return what
    return None


def check_job_files(spec, protect: list[tuple[str, str]], environ=None, cwd: str | None = None) -> None:
    """Refuse (one line, before anything is queued) a job whose output, error or input file could
    be one of `protect` ((what, path): the store and its -wal, -shm and -journal files)."""
    from gpuparity.validate import terminal_safe

    environ = os.environ if environ is None else environ
    cwd = cwd or os.getcwd()
    names = list(dict.fromkeys([spec.job_name, *_values(spec.extra, "job-name"),
                                *([environ["SBATCH_JOB_NAME"]] if environ.get("SBATCH_JOB_NAME") else [])]))
    # a relative name is in the job's working folder: --chdir's (its symbols taken as a pattern's), else sbatch's
    bases = [cwd] + [os.path.join(cwd, d) for value in _values(spec.extra, "chdir") for d in expand(value, names)]
    for where, pattern in job_files(spec, environ):
        for base in bases:
            for expanded in expand(pattern, names):
                path = os.path.normpath(os.path.join(base, expanded))
                what = _hits(path, protect)
                if what is not None:
                    raise UserError(f"{where} {terminal_safe(pattern)}: could be {what}: refusing to write over it "
                                    "(SLURM writes the job's log there, or reads its input)")
