"""Hostile values in the peers' result files (issue 45, items 6-8), on the real guidellm and aiperf
files (tests/data/peers) and a `vllm bench serve` file in its schema: a time that is not finite,
negative or past any run's range, a JSON number beyond a double, a negative count, a length that
is not positive, a URL that does not parse: each refused in one line naming the field, exit 2 from
the CLI, never an exception; and a fuzz of all three parsers (values anywhere, in the records too)."""

from __future__ import annotations

import copy
import gzip
import json
import shutil
from pathlib import Path

import pytest
from conftest import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_serving_peers import AIPERF, GUIDELLM, vllm_file

from gpuparity.errors import UserError
from gpuparity.results.peers import load_import_file

GUIDELLM_REPORT = json.loads(gzip.decompress(GUIDELLM.read_bytes()))
AIPERF_RECORDS = [json.loads(line) for line in (AIPERF / "profile_export.jsonl").read_text().splitlines() if line]
AIPERF_AGGREGATE = json.loads((AIPERF / "profile_export_aiperf.json").read_text())


def vllm(tmp_path: Path, change) -> Path:
    f = vllm_file()
    change(f)
    path = tmp_path / "vllm.json"
    path.write_text(f if isinstance(f, str) else json.dumps(f))
    return path


def guidellm(tmp_path: Path, change) -> Path:
    g = copy.deepcopy(GUIDELLM_REPORT)
    change(g)
    path = tmp_path / "guidellm.json"
    path.write_text(json.dumps(g))
    return path


def aiperf(tmp_path: Path, change_record=None, change_aggregate=None) -> Path:
    records, agg = copy.deepcopy(AIPERF_RECORDS), copy.deepcopy(AIPERF_AGGREGATE)
    if change_record:
        change_record(records[0])
    if change_aggregate:
        change_aggregate(agg)
    d = tmp_path / "aiperf"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir()
    (d / "profile_export.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (d / "profile_export_aiperf.json").write_text(json.dumps(agg))
    return d / "profile_export.jsonl"


def refused(path: Path, field: str) -> str:
    with pytest.raises(UserError) as exc:
        load_import_file(str(path))
    text = str(exc.value)
    assert "\n" not in text and field in text, text
    return text


def ttft(value):
    return lambda r: r["metrics"]["time_to_first_token"].__setitem__("value", value)


# -- 6: non-finite or huge times --------------------------------------------------------------------
@pytest.mark.parametrize("value", [1e308, 1e20, -0.5])
def test_a_time_out_of_range_is_refused_naming_its_field(tmp_path, value):
    refused(vllm(tmp_path, lambda f: f["ttfts"].__setitem__(0, value)), "ttfts.0")
    refused(vllm(tmp_path, lambda f: f["start_times"].__setitem__(2, value)), "start_times.2")
    refused(vllm(tmp_path, lambda f: f.__setitem__("mean_ttft_ms", value)), "mean_ttft_ms")
    ok = lambda g: g["benchmarks"][0]["requests"]["successful"][0]      # noqa: E731
    refused(guidellm(tmp_path, lambda g: ok(g).__setitem__("request_end_time", value)), "request_end_time")
    refused(guidellm(tmp_path, lambda g: ok(g).__setitem__("time_to_first_token_ms", value)),
            "time_to_first_token_ms")
    refused(aiperf(tmp_path, ttft(value)), "time_to_first_token")


def test_a_json_number_beyond_a_double_is_refused_not_read_as_infinity(tmp_path):
    path = vllm(tmp_path, lambda f: None)
    path.write_text(path.read_text().replace('"duration": ', '"duration": 1e400, "was": ', 1))
    refused(path, "duration")
    path = guidellm(tmp_path, lambda g: None)
    path.write_text(path.read_text().replace('"duration": ', '"duration": 1e400, "was": ', 1))
    refused(path, "duration")
    path = aiperf(tmp_path)
    path.write_text(path.read_text().replace('"request_latency": {"value": ', '"request_latency": {"value": 1e400, '
                                             '"was": ', 1))
    refused(path, "request_latency")


# -- 7: a URL that does not parse -----------------------------------------------------------------------
@pytest.mark.parametrize("url", ["http://[::1:8000", "http://\x1b[31mhost:8000/v1", "http://host:99999"])
def test_a_url_that_does_not_parse_is_refused_in_one_line(tmp_path, url):
    refused(aiperf(tmp_path, change_aggregate=lambda a: a["input_config"]["endpoint"].__setitem__("urls", [url])),
            "URL")
    refused(guidellm(tmp_path, lambda g: g["benchmarks"][0]["config"]["backend"].__setitem__("target", url)),
            "target")


# -- 8: negative values --------------------------------------------------------------------------------
def test_negative_times_counts_and_lengths_are_refused(tmp_path):
    refused(aiperf(tmp_path, ttft(-412.87)), "time_to_first_token")
    gaps = lambda r: r["metrics"]["inter_chunk_latency"].__setitem__("value", [-5.0, 1.0])     # noqa: E731
    refused(aiperf(tmp_path, gaps), "inter_chunk_latency")
    osl = lambda r: r["metrics"]["output_sequence_length"].__setitem__("value", -100)          # noqa: E731
    refused(aiperf(tmp_path, osl), "output_sequence_length")
    refused(vllm(tmp_path, lambda f: f["output_lens"].__setitem__(0, -8)), "output_lens.0")
    refused(vllm(tmp_path, lambda f: f.__setitem__("total_output_tokens", -48)), "total_output_tokens")
    ok = lambda g: g["benchmarks"][0]["requests"]["successful"][0]      # noqa: E731
    refused(guidellm(tmp_path, lambda g: ok(g).__setitem__("output_tokens", -8)), "output_tokens")
    refused(guidellm(tmp_path, lambda g: ok(g).__setitem__("request_start_time", -5)), "request_start_time")


@pytest.mark.parametrize("value", ["-5", "0", "5.5", "1e3", "٣"])
def test_a_vllm_metadata_length_that_is_not_positive_is_refused(tmp_path, value):
    text = refused(vllm(tmp_path, lambda f: f.__setitem__("input_len", value)), "input_len")
    assert "--metadata" in text
    refused(vllm(tmp_path, lambda f: f.__setitem__("ignore_eos", "maybe")), "ignore_eos")


def test_the_cli_refuses_each_with_exit_2_and_stores_nothing(tmp_path):
    env = {"GPUPARITY_DB": str(tmp_path / "store.db")}
    for path in (vllm(tmp_path, lambda f: f["ttfts"].__setitem__(0, 1e308)),
                 aiperf(tmp_path, change_aggregate=lambda a: a["input_config"]["endpoint"].__setitem__(
                     "urls", ["http://[::1:8000"]))):
        p = run_cli("import", str(path), env=env)
        assert p.returncode == 2 and "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not (tmp_path / "store.db").exists()


# -- the three parsers fuzzed ---------------------------------------------------------------------------
HOSTILE = st.one_of(
    st.sampled_from([None, True, "", "x", "\x1b[31m", "http://[::1", -1, -1e-9, 0, 0.0, 1e308, 2**63, -(2**63), 10**30,
                     1e-320, [], {}, [-1.0], ["a"]]),
    st.floats(allow_nan=False), st.integers(-(10**20), 10**20), st.text(max_size=6))


def _numeric_paths(obj, where=()):
    """Paths to every leaf of a document (numbers and strings first: where the parsers read)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _numeric_paths(v, (*where, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:3]):
            yield from _numeric_paths(v, (*where, i))
    else:
        yield where


def _set(obj, path, value):
    for k in path[:-1]:
        obj = obj[k]
    obj[path[-1]] = value


VLLM_PATHS = list(_numeric_paths(vllm_file()))
GUIDELLM_PATHS = [p for p in _numeric_paths(GUIDELLM_REPORT) if p[:1] != ("config",) or "backend" in p]
AIPERF_RECORD_PATHS = list(_numeric_paths(AIPERF_RECORDS[0]))
AIPERF_AGGREGATE_PATHS = [p for p in _numeric_paths(AIPERF_AGGREGATE) if p[:1] in (
    ("input_config",), ("aiperf_version",), ("start_time",)) or p[-1] in ("avg", "p50", "p90", "p99", "std")]


@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.data())
def test_any_value_anywhere_in_a_peer_file_is_a_document_or_one_line(tmp_path, data):
    """A leaf of a real peer file (vLLM's schema, guidellm's report, aiperf's records or aggregate)
    replaced by a hostile value: the import stores a strict-JSON document or refuses in one line."""
    kind = data.draw(st.sampled_from(["vllm", "guidellm", "aiperf records", "aiperf aggregate"]))
    value = data.draw(HOSTILE)
    if kind == "vllm":
        path = vllm(tmp_path, lambda f: _set(f, data.draw(st.sampled_from(VLLM_PATHS)), value))
    elif kind == "guidellm":
        path = guidellm(tmp_path, lambda g: _set(g, data.draw(st.sampled_from(GUIDELLM_PATHS)), value))
    elif kind == "aiperf records":
        path = aiperf(tmp_path, lambda r: _set(r, data.draw(st.sampled_from(AIPERF_RECORD_PATHS)), value))
    else:
        path = aiperf(tmp_path, change_aggregate=lambda a: _set(a, data.draw(st.sampled_from(AIPERF_AGGREGATE_PATHS)),
                                                                value))
    try:
        doc = load_import_file(str(path))
    except UserError as exc:
        assert "\n" not in str(exc)
        return
    json.dumps(doc, allow_nan=False)
    for r in doc["results"]:
        s = (r.get("info") or {}).get("serving") or {}
        for name in ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms"):
            assert all(v is None or v >= 0 for v in (s.get(name) or {}).values()), (name, s.get(name))
        assert all(v >= 0 for v in (r["params"].get("input_len", 1), r["params"].get("output_len", 1)))
