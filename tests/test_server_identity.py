"""A serving result's server identity, asked over real HTTP (a loopback server answering as vLLM,
SGLang and TGI answer: their routes' shapes, recorded from their code and docs), read through the
validation layer, with launch flags and declarations; and what two identities differ in."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuparity.results.server_identity import differences, identity_text, norm_dtype, norm_model, same_server
from gpuparity.workloads.serving import server_info as si
from gpuparity.workloads.serving.wire import ModelList

VLLM_METRICS = """# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",cache_dtype="fp8_e4m3",calculate_kv_scales="False",cpu_offload_gb="0",\
enable_prefix_caching="True",engine="0",gpu_memory_utilization="0.9",num_gpu_blocks="27222",swap_space="4"} 1.0
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
vllm:generation_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1.234e+06
"""
VLLM_MODELS = {"object": "list", "data": [{"id": "llama", "object": "model", "created": 1, "owned_by": "vllm",
                                           "root": "/models/Llama-3.1-8B-Instruct", "parent": None,
                                           "max_model_len": 131072, "permission": [{"id": "modelperm-1"}]}]}
SGLANG_INFO = {"model_path": "meta-llama/Llama-3.1-8B-Instruct", "tokenizer_path": "meta-llama/Llama-3.1-8B-Instruct",
               "tp_size": 8, "dp_size": 1, "ep_size": 1, "pp_size": 1, "dtype": "auto", "quantization": "fp8",
               "kv_cache_dtype": "auto", "context_length": None, "mem_fraction_static": 0.88, "version": "0.5.4",
               "internal_states": [{"last_gen_throughput": 812.5}]}
SGLANG_MODEL = {"model_path": "meta-llama/Llama-3.1-8B-Instruct", "tokenizer_path": "x", "is_generation": True,
                "preferred_sampling_params": None, "weight_version": "default"}
TGI_INFO = {"model_id": "bigscience/bloom-560m", "model_sha": "e985a63cdc139290c5f700ff1929f0b5942cced2",
            "model_dtype": "torch.float16", "model_device_type": "cuda", "model_pipeline_tag": "text-generation",
            "max_concurrent_requests": 128, "max_input_tokens": 1024, "max_total_tokens": 2048,
            "router": "text-generation-router", "version": "2.0.0", "sha": None, "docker_label": None}
ROUTES = {
    "/vllm/version": (200, {"version": "0.11.0"}), "/vllm/metrics": (200, VLLM_METRICS),
    "/vllm/v1/models": (200, VLLM_MODELS),
    "/sglang/get_server_info": (200, SGLANG_INFO), "/sglang/get_model_info": (200, SGLANG_MODEL),
    "/sglang/v1/models": (200, {"object": "list", "data": [{"id": "meta-llama/Llama-3.1-8B-Instruct",
                                                             "owned_by": "sglang"}]}),
    "/tgi/info": (200, TGI_INFO), "/tgi/v1/models": (200, {"data": [{"id": "tgi", "owned_by": "huggingface"}]}),
    "/odd/version": (200, {"version": 7}), "/odd/metrics": (200, b"\xff\xfe not text"),
    "/odd/get_server_info": (200, "{not json"), "/odd/v1/models": (200, {"data": [{"id": "m"}]}),
}


class Canned(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        code, body = ROUTES.get(self.path, (404, {"detail": "Not Found"}))
        data = body if isinstance(body, bytes) else body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain" if isinstance(body, str) else "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def engines():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Canned)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def identity(base: str, engine: str, declared: dict | None = None, launch: dict | None = None) -> dict:
    from gpuparity.workloads.serving.client import fetch_models

    url = f"{base}/{engine}/v1"
    cards, _ = asyncio.run(fetch_models(url, 5, {}))
    answers = asyncio.run(si.ask(url, {}))
    return si.build_identity(answers, cards, {"engine": None, "server_flags": None, "gpus": None, **(declared or {})},
                             launch)


def test_vllm_says_its_version_model_and_kv_cache_dtype_and_the_flags_say_the_rest(engines):
    ident = identity(engines, "vllm", {"server_flags": "--dtype bfloat16 -tp 8 --max-num-seqs 256", "gpus": 8})
    assert ident["engine"] == "vllm" and ident["engine_version"] == "0.11.0"
    assert ident["sources"]["engine"] == "/metrics" and ident["sources"]["engine_version"] == "/version"
    assert norm_model(ident["model"]) == "llama-3.1-8b-instruct"          # model_name on its samples
    assert ident["kv_cache_dtype"] == "fp8_e4m3" and ident["max_model_len"] == 131072
    assert ident["config_gauges"]["vllm:cache_config_info"]["num_gpu_blocks"] == "27222"
    assert (ident["dtype"], ident["tensor_parallel"], ident["gpus"]) == ("bfloat16", 8, 8)
    assert ident["sources"]["dtype"] == ident["sources"]["tensor_parallel"] == "declared"
    assert set(ident["asked"]) == {"/get_server_info", "/get_model_info", "/info"}     # 404: noted, not fatal
    text = identity_text(ident)
    assert text.startswith("vllm 0.11.0; model Llama-3.1-8B-Instruct") and "precision bfloat16 (declared)" in text


def test_sglang_says_its_server_arguments_and_a_contradicting_declaration_is_kept_apart(engines):
    ident = identity(engines, "sglang", {"server_flags": "--tp 4", "engine": "sglang 0.5.4"})
    assert (ident["engine"], ident["engine_version"], ident["tensor_parallel"]) == ("sglang", "0.5.4", 8)
    assert ident["quantization"] == "fp8" and ident["model_revision"] == "default"
    assert ident["dtype"] == "auto" and norm_dtype(ident["dtype"]) is None          # 'auto' is not a known dtype
    assert ident["conflicts"] == ["tensor_parallel: the server says 8, declared 4"]


def test_tgi_says_its_model_revision_and_dtype(engines):
    ident = identity(engines, "tgi")
    assert (ident["engine"], ident["engine_version"]) == ("tgi", "2.0.0")
    assert ident["model_revision"].startswith("e985a63") and norm_dtype(ident["dtype"]) == "fp16"
    assert ident["max_model_len"] == 2048


def test_answers_of_the_wrong_shape_are_noted_never_fatal(engines):
    ident = identity(engines, "odd", launch={"command": ["vllm", "serve", "org/Some-Model", "--port", "8000",
                                                         "--quantization=awq", "-tp", "2"], "status_file": "/x"})
    assert ident["asked"]["/version"].startswith("not understood") and "/get_server_info" in ident["asked"]
    assert ident["engine"] == "vllm" and ident["sources"]["engine"] == "launch command"
    assert (ident["model"], ident["quantization"], ident["tensor_parallel"]) == ("org/Some-Model", "awq", 2)
    assert "status_file" not in ident["launch"]               # a temporary file is no evidence


def test_what_two_identities_differ_in():
    a = {"model": "/m/Llama-3.1-8B-Instruct", "dtype": "bfloat16", "tensor_parallel": 1, "engine": "vllm"}
    b = {"model": "meta-llama/llama-3.1-8b-instruct", "dtype": "bf16", "tensor_parallel": 1, "engine": "sglang"}
    d = differences(a, b)
    assert d["differ"] == [] and "quantization" in d["unknown"]        # one model and precision, engines aside
    assert not same_server(a, b)                                      # but not one server: never A/A
    big = {"model": "Llama-3.1-70B-Instruct", "dtype": "bf16", "tensor_parallel": 8}
    d = differences(a, big)
    assert d["differ"] == ["model", "tensor_parallel"] and d["values"]["tensor_parallel"] == [1, 8]
    assert differences({"dtype": "float32"}, {"dtype": "torch.bfloat16"})["values"]["dtype"] == ["fp32", "bf16"]
    launched = {**a, "launch": {"command": ["vllm", "serve", "m", "--port", "8000"], "env": {}}}
    again = {**a, "launch": {"command": ["vllm", "serve", "m", "--port", "8001"], "env": {}}}
    assert same_server(launched, again) and not same_server(launched, a)


def test_model_cards_keep_vllm_fields():
    cards = ModelList.model_validate(VLLM_MODELS).data
    assert cards[0].root == "/models/Llama-3.1-8B-Instruct" and cards[0].max_model_len == 131072


LABEL_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)


@settings(max_examples=60, deadline=2000)
@given(st.dictionaries(st.from_regex(r"[a-z_][a-z0-9_]{0,10}", fullmatch=True), LABEL_TEXT, max_size=5))
def test_prometheus_labels_round_trip_their_escapes(labels):
    def esc(v: str) -> str:
        return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    body = ",".join(f'{k}="{esc(v)}"' for k, v in labels.items())
    assert si.parse_labels(body) == labels
    gauges, _, prefixes = si.config_gauges(f"x:model_config_info{{{body}}} 1.0\n" if labels else "")
    assert (gauges.get("x:model_config_info") is not None) == bool(labels)


@settings(max_examples=80, deadline=2000)
@given(st.dictionaries(st.sampled_from(si.ROUTES), st.tuples(st.sampled_from([200, 404, None]), st.binary(max_size=300))))
def test_any_answers_make_an_identity(answers):
    ident = si.build_identity(answers, [], {"engine": None, "server_flags": None, "gpus": None}, None)
    json.dumps(ident)
    assert isinstance(ident["sources"], dict)


def test_a_declaration_that_names_the_same_model_another_way_is_no_conflict():
    """The conflict check compares fields as identities compare them (server_identity.comparable):
    a hub id against the path the launch command loads is one model; another size still conflicts."""
    launch = {"command": ["vllm", "serve", "--model", "/models/Llama-3.1-8B-Instruct/", "--tensor-parallel-size", "2"]}
    same = si.build_identity({}, [], {"engine": None, "gpus": "2",
                                      "server_flags": "--model meta-llama/Llama-3.1-8B-Instruct --tp 2"}, launch)
    assert same["conflicts"] is None and same["gpus"] == 2
    other = si.build_identity({}, [], {"engine": None, "gpus": None,
                                       "server_flags": "--model meta-llama/Llama-3.1-70B-Instruct --tp 2"}, launch)
    assert other["conflicts"] == ["model: the server says /models/Llama-3.1-8B-Instruct/, declared "
                                  "meta-llama/Llama-3.1-70B-Instruct"]
