"""comparison.frame: parameters spread into typed columns (ints stay ints), name clashes, filters."""

from __future__ import annotations

import json

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from test_compare import make_result, make_run, noisy

from gpuparity.comparison.frame import typed_column, widen
from gpuparity.results.store import Store

SCALARS = st.none() | st.booleans() | st.integers(-2 ** 62, 2 ** 62) | st.floats(allow_nan=False) | st.text(max_size=5)


def test_typed_columns_keep_json_types():
    assert typed_column([1, None, 3]).dtype == "Int64"
    assert typed_column([1, 2.5, None]).dtype == "Float64"
    assert typed_column([True, None]).dtype == "boolean"
    mixed = typed_column(["nt", 4, None, [1, 2]])
    assert list(mixed) == ["nt", '4', None, "[1, 2]"]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(SCALARS, max_size=12))
def test_typed_column_round_trips_every_value(values):
    col = typed_column(values)
    assert len(col) == len(values)
    for got, want in zip(col, values, strict=True):
        if want is None:
            assert got is None or pd.isna(got)
        elif isinstance(col.dtype, (pd.Int64Dtype, pd.Float64Dtype, pd.BooleanDtype)):
            assert got == want
        else:                          # mixed types: text as is, anything else as its JSON
            assert got == (want if isinstance(want, str) else json.dumps(want))


def test_widen_places_params_and_renames_clashes(tmp_path):
    df = pd.DataFrame({"key": ["a", "b"], "params": [{"m": 1, "key": "x"}, {"op": "copy"}], "value": [1.0, 2.0]})
    wide = widen(df)
    assert list(wide.columns) == ["key", "m", "param_key", "op", "value"]
    assert wide["m"].dtype == "Int64" and wide["m"].isna().tolist() == [False, True]
    with Store(str(tmp_path / "c.db")) as s:
        s.save_run(make_run([make_result("gemm", {"m": 1}, noisy(10, 0.01, 5, 1))]))
        assert {"run_id", "key", "value", "samples"} <= s.columns("results")
        assert "label" in s.columns("runs")
