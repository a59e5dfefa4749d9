"""The SQL of the run filters every verb shares (--gpu, --stack, --since, --host, label=, job=)."""

from __future__ import annotations

from gpuparity.errors import UserError


def run_filter_sql(gpu: str | None = None, stack: str | None = None, since: str | None = None,
                   host: str | None = None, run_ids: list[str] | None = None,
                   label: str | None = None, job: str | None = None,
                   postgres: bool = False) -> tuple[str, list]:
    """WHERE clause for the filters every verb shares (--gpu, --stack, --since, --host, label=, job=).

    gpu: a spec id or product name, exactly (case-insensitive), so h100 never pools H100 SXM with
    H100 PCIe; 'h100*' is a prefix (comparisons then say which products a side pools).
    stack: whole version parts: 'rocm' matches 'rocm 6.2.4', 'rocm 6.2' matches 'rocm 6.2.4'
    but not 'rocm 6.20'."""
    clauses, args = [], []
    if gpu:
        g = gpu.lower()
        if g.endswith("*"):
            prefix = _like_escape(g[:-1]) + "%"
            clauses.append("(LOWER(product) LIKE ? ESCAPE '!' OR LOWER(spec_id) LIKE ? ESCAPE '!')")
            args += [prefix, prefix]
        else:
            clauses.append("(LOWER(product) = ? OR LOWER(spec_id) = ?)")
            args += [g, g]
    if stack:
        st = _like_escape(stack.lower().strip())
        clauses.append("(LOWER(stack) = ? OR LOWER(stack) LIKE ? ESCAPE '!' OR LOWER(stack) LIKE ? ESCAPE '!')")
        args += [stack.lower().strip(), f"{st} %", f"{st}.%"]
    if since:
        clauses.append("started_at >= ?")
        args.append(since)
    if host:
        clauses.append("host = ?")
        args.append(host)
    if label:                   # a run's `run --label`, exactly
        clauses.append("label = ?")
        args.append(label)
    if job:
        sql, values = _job_clause(job, postgres)
        clauses.append(sql)
        args += values
    if run_ids:
        clauses.append("run_id IN (" + ",".join("?" * len(run_ids)) + ")")
        args += list(run_ids)
    return ("WHERE " + " AND ".join(clauses)) if clauses else "", args


def _job_clause(job: str, postgres: bool) -> tuple[str, list]:
    """job=12345: the runs of that SLURM job (every task of an array: the id sbatch printed, or one
    task's own id); job=12345_2: one array task. Read from the fingerprint's slurm block."""
    import re

    m = re.fullmatch(r"([0-9]{1,20})(?:_([0-9]{1,9}))?", job.strip())
    if not m:
        raise UserError(f"job={job}: a SLURM job id is a number (12345, or 12345_2 for one task of an array)")

    def field(name: str) -> str:
        return f"(fingerprint::jsonb #>> '{{slurm,{name}}}')" if postgres else f"(fingerprint ->> '$.slurm.{name}')"

    if m.group(2) is not None:
        task = str(int(m.group(2))) if postgres else int(m.group(2))      # #>> gives text; ->> an integer
        return f"({field('job')} = ? AND {field('array_task_id')} = ?)", [m.group(1), task]
    return f"({field('job')} = ? OR {field('job_id')} = ?)", [m.group(1), m.group(1)]


def _like_escape(text: str) -> str:
    """A literal for LIKE ... ESCAPE '!': % and _ in a name match only themselves."""
    return text.replace("!", "!!").replace("%", "!%").replace("_", "!_")
