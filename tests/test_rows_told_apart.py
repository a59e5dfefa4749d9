"""Every row of a table names itself (issue 40): the quick suite's run table at 100 columns gives
no two rows the same parameter text, and the report's chart labels, cut to their width, none the
same either. Rows are the quick suite's real cases (its plan) rendered by the table `run` and
`show` print (cli/tables.print_run_rows), on a CPU and on GPUs of the spec table."""

from __future__ import annotations

import pytest

SPECS = ["cpu", "h200-sxm", "mi300x"]


def quick_rows(spec: str) -> list[dict]:
    """One ok result per case of the quick suite's plan for this spec, each with its own figure."""
    from gpuparity.execute.plan import cases_for, spec_context
    from gpuparity.execute.suites import workloads_for
    from gpuparity.results.schema import new_result

    ctx = spec_context(spec, "quick", {})
    rows = []
    for i, case in enumerate(cases_for(workloads_for("quick"), "quick", ctx, {})):
        r = new_result(case.workload.name, case.workload.category, case.params, case.params.get("dtype"))
        r["status"] = "ok"
        r["metric"] = {"value": 10.0 + i, "unit": "TFLOP/s", "ci_low": 9.0 + i, "ci_high": 11.0 + i, "trials": 1}
        rows.append(r)
    return rows


def table_rows(text: str, n: int) -> list[tuple[str, str, str]]:
    """(workload, parameter text, dtype) of each of the table's n rows, wrapped lines joined."""
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("workload"))
    head = lines[header]
    p, d = head.index("params"), head.index("dtype")
    rows: list[list] = []
    for line in lines[header + 2:]:
        if line[:p].strip():
            if len(rows) == n:
                break           # the notes below the table
            rows.append([line[:p].strip(), [line[p:d].strip()], line[d:].split()[0]])
        elif line.strip():
            rows[-1][1].append(line[p:d].strip())
    return [(w, " ".join(x for x in parts if x), dtype) for w, parts, dtype in rows]


@pytest.mark.parametrize("spec", SPECS)
def test_no_two_rows_of_the_run_table_print_the_same_parameters(spec, capsys, monkeypatch):
    from gpuparity.cli.tables import print_run_rows

    monkeypatch.setenv("COLUMNS", "100")
    rows = quick_rows(spec)
    print_run_rows({"run_id": "r", "status": "complete", "results": rows})
    text = capsys.readouterr().out
    assert max(len(line) for line in text.splitlines()) <= 100
    shown = table_rows(text, len(rows))
    assert len(shown) == len(rows) and [w for w, _, _ in shown] == [r["workload"] for r in rows]
    alike = [s for s in shown if shown.count(s) > 1]
    assert not alike, f"rows printed alike: {alike}"
    conv = [p for w, p, _ in shown if w == "conv"]
    assert len(conv) >= 3 and all("pass=" in p and "channels_last=" in p for p in conv)


@pytest.mark.parametrize("spec", SPECS)
def test_cut_chart_labels_tell_the_rows_apart(spec):
    """The report's charts cut a label at 44 characters: what sets a row apart comes first in it,
    so on this machine's quick suite no two are cut alike; where they still are (a GPU's attention
    cases), the second is numbered."""
    from gpuparity.report.plots import short_labels

    labels = short_labels(quick_rows(spec))
    assert len(set(labels)) == len(labels), [lab for lab in labels if labels.count(lab) > 1]
    numbered = [lab for lab in labels if lab.endswith(")") and "… (" in lab]
    if spec == "cpu":
        assert not numbered
    assert all(len(lab) <= 44 for lab in labels if lab not in numbered)


def test_what_the_others_imply_goes_last():
    """Three conv rows of one layer told apart by pass and channels_last: those come before the
    layer's sizes, which its net fixes; square GEMM sizes stay merged and first where they vary."""
    from gpuparity.report.labels import case_texts, implied

    layer = {"layer": "res2_3x3", "cin": 64, "cout": 64, "hw": 56}
    rows = [{"workload": "conv", "dtype": "bf16", "params": {"net": "resnet50", **layer, "channels_last": cl,
                                                            "pass": p}}
            for cl, p in ((True, "fwd"), (True, "bwd"), (False, "fwd"))]
    rows.append({"workload": "conv", "dtype": "bf16", "params": {"net": "unet", "layer": "down1", "cin": 320,
                                                                 "cout": 320, "hw": 8, "channels_last": True,
                                                                 "pass": "fwd"}})
    rows += [{"workload": "gemm", "dtype": "bf16", "params": {"m": s, "n": s, "k": s, "layout": lay}}
             for s in (1024, 4096) for lay in ("nn", "nt")]
    assert implied(rows)["conv"] == {"layer", "cin", "cout", "hw"}
    texts = case_texts(rows)
    assert texts[1] == "net=resnet50 channels_last=True pass=bwd layer=res2_3x3 cin=cout=64 hw=56"
    assert texts[3] == "net=unet channels_last=True pass=fwd layer=down1 cin=cout=320 hw=8"
    assert texts[4:6] == ["m=n=k=1024 layout=nn", "m=n=k=1024 layout=nt"]
