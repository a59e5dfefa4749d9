"""Who is serving: the server's identity asked from the server where its engine says it, with the
launch command's flags and what the user declares, into info.server_identity
(results/server_identity.py defines the fields and how two identities compare).

Asked, each bounded (ASK_TIMEOUT_S, ASK_BYTES) and validated by pydantic models that ignore extra
fields; a route the server lacks (404) is noted and skipped:
- GET /version (vLLM: {"version": "0.11.0"}; the demo server answers the same way);
- GET /metrics (Prometheus text): the info gauges named *_config_info (value 1, the configuration
  in labels: vLLM's vllm:cache_config_info has cache_dtype, block_size, ...; every vllm: sample has
  model_name; the demo's gpuparity_demo:model_config_info has dtype, quantization, parallel sizes);
- GET /get_server_info and /get_model_info (SGLang: its server arguments, flat: model_path,
  tp_size, dp_size, ep_size, pp_size, dtype, quantization, kv_cache_dtype, version; weight_version);
- GET /info (TGI: model_id, model_sha, model_dtype, version);
- /v1/models (already read by the workload): root, max_model_len, owned_by.
Precedence per field: the server's word, then the launch command (--serve-cmd), then the
declaration (--set engine=, --set server_flags=, --set gpus=); a declaration the server contradicts
is kept in "conflicts".
"""

from __future__ import annotations

import asyncio
import re
import shlex

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from gpuparity.results.server_identity import comparable, norm_int
from gpuparity.workloads.serving.wire import ProtocolError, one_line, read_body

ASK_TIMEOUT_S = 5.0
ASK_BYTES = 1 << 20
MAX_METRIC_LINES = 20_000
ROUTES = ("/version", "/metrics", "/get_server_info", "/get_model_info", "/info")
Text = Field(None, max_length=1000)


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class VersionInfo(_Loose):              # vLLM GET /version
    version: StrictStr = Field(max_length=200)


class SglangServerInfo(_Loose):         # SGLang GET /get_server_info (server args, flattened)
    model_path: StrictStr | None = Text
    served_model_name: StrictStr | None = Text
    tp_size: StrictInt | None = Field(None, ge=1, le=1_000_000)
    pp_size: StrictInt | None = Field(None, ge=1, le=1_000_000)
    dp_size: StrictInt | None = Field(None, ge=1, le=1_000_000)
    ep_size: StrictInt | None = Field(None, ge=1, le=1_000_000)
    dtype: StrictStr | None = Field(None, max_length=100)
    quantization: StrictStr | None = Field(None, max_length=100)
    kv_cache_dtype: StrictStr | None = Field(None, max_length=100)
    context_length: StrictInt | None = Field(None, ge=1, le=10**9)
    version: StrictStr | None = Field(None, max_length=200)


class SglangModelInfo(_Loose):          # SGLang GET /get_model_info
    model_path: StrictStr | None = Text
    weight_version: StrictStr | None = Field(None, max_length=200)


class TgiInfo(_Loose):                  # TGI GET /info
    model_id: StrictStr = Field(max_length=1000)
    model_sha: StrictStr | None = Field(None, max_length=200)
    model_dtype: StrictStr | None = Field(None, max_length=100)
    max_total_tokens: StrictInt | None = Field(None, ge=1, le=10**9)
    version: StrictStr | None = Field(None, max_length=200)


# -- Prometheus text: the info gauges ------------------------------------------------------------
SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)\{(.*)\}\s+(\S+)(?:\s+\d+)?\s*$")
LABEL = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|$)')
ESCAPES = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


def parse_labels(text: str) -> dict[str, str] | None:
    """'a="1",b="x\\"y"' -> {"a": "1", "b": 'x"y'} (the exposition format's escapes); None if malformed."""
    out, pos = {}, 0
    while pos < len(text):
        m = LABEL.match(text, pos)
        if not m or m.end() == pos:
            return None
        out[m.group(1)] = re.sub(r'\\[\\"n]', lambda e: ESCAPES[e.group(0)], m.group(2))
        pos = m.end()
    return out


def config_gauges(text: str) -> tuple[dict[str, dict[str, str]], str | None, set[str]]:
    """({gauge name: its labels} for the *_config_info gauges, a model_name label seen on any sample,
    the metric name prefixes seen ('vllm', 'sglang', ...)) of a Prometheus text page."""
    gauges, model, prefixes = {}, None, set()
    for n, line in enumerate(text.split("\n")):          # the format's lines end at \n only (not \x1e, \x85, ...)
        line = line.rstrip("\r")
        if n >= MAX_METRIC_LINES:
            break
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        name = m.group(1) if m else line.split("{")[0].split(" ")[0]
        if ":" in name:
            prefixes.add(name.split(":", 1)[0][:40])
        if not m:
            continue
        labels = parse_labels(m.group(2))
        if labels is None:
            continue
        if name.endswith("_config_info"):
            gauges[name[:200]] = {k[:100]: one_line(v, 200) for k, v in list(labels.items())[:100]}
        model = model or (one_line(labels["model_name"], 300) if labels.get("model_name") else None)
    return gauges, model, prefixes


# -- launch flags ---------------------------------------------------------------------------------
FLAGS = {
    "model": ("--model", "--model-path", "--model-id", "--model_name_or_path"),
    "dtype": ("--dtype", "--torch-dtype", "--torch_dtype"),
    "quantization": ("--quantization", "-q", "--quantize"),
    "kv_cache_dtype": ("--kv-cache-dtype",),
    "tensor_parallel": ("--tensor-parallel-size", "-tp", "--tp-size", "--tp", "--num-shard"),
    "pipeline_parallel": ("--pipeline-parallel-size", "-pp", "--pp-size", "--pp"),
    "data_parallel": ("--data-parallel-size", "-dp", "--dp-size", "--dp"),
    "expert_parallel": ("--expert-parallel-size", "--ep-size", "--ep"),
}
ENGINES = (("vllm", ("vllm serve", "vllm.entrypoints")), ("sglang", ("sglang.launch_server", "sglang serve")),
           ("tgi", ("text-generation-launcher",)), ("trtllm", ("trtllm-serve",)),
           ("transformers", ("transformers serve",)), ("gpuparity-demo", ("gpuparity.demo.serving_server",)))


def split_command(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as exc:
        from gpuparity.errors import UserError

        raise UserError(f"cannot split the command '{one_line(text, 120)}': {exc}") from None


def flag_fields(argv: list[str]) -> dict:
    """What a serve command line says about the configuration: its engine, model and the FLAGS."""
    joined = " ".join(a.rsplit("/", 1)[-1] for a in argv)
    out: dict = {}
    for engine, marks in ENGINES:
        if any(m in joined for m in marks):
            out["engine"] = engine
            break
    wanted = {flag: field for field, flags in FLAGS.items() for flag in flags}
    for i, arg in enumerate(argv):
        flag, eq, value = arg.partition("=")
        if flag in wanted and not eq:
            value = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("-") else ""
        if flag in wanted and value:
            out.setdefault(wanted[flag], one_line(value, 300))
        if arg == "serve" and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
            out.setdefault("model", one_line(argv[i + 1], 300))     # vllm serve MODEL, transformers serve MODEL
        if arg == "--enable-expert-parallel":
            out.setdefault("expert_parallel", "enabled")
    return out


# -- asking the server ----------------------------------------------------------------------------
def server_root(url: str) -> str:
    """The server's root from its OpenAI base URL (http://h:8000/v1 -> http://h:8000)."""
    url = url.rstrip("/")
    return url[:-3] if url.endswith("/v1") else url


async def _get(client, url: str) -> tuple[int | None, bytes | str]:
    try:
        async with client.stream("GET", url, headers={"Accept-Encoding": "identity"}) as resp:
            return resp.status_code, await read_body(resp, ASK_BYTES)
    except ProtocolError as exc:
        return None, str(exc)
    except Exception as exc:  # noqa: BLE001 - an unreachable route is a note, never a failed run
        return None, f"{type(exc).__name__}: {one_line(exc, 120)}"


async def ask(url: str, headers: dict, timeout_s: float = ASK_TIMEOUT_S) -> dict[str, tuple[int | None, bytes | str]]:
    """{route: (HTTP status or None, body or error text)} for every route in ROUTES, together."""
    import httpx

    root = server_root(url)
    async with httpx.AsyncClient(timeout=httpx.Timeout(timeout_s), headers=headers) as client:
        got = await asyncio.wait_for(asyncio.gather(*(_get(client, root + r) for r in ROUTES)), timeout_s + 1)
    return dict(zip(ROUTES, got, strict=True))


def _parsed(model, body, route: str, notes: dict):
    from gpuparity.errors import UserError
    from gpuparity.validate import parse, parse_json

    try:
        return parse(model, parse_json(body, route), route)
    except UserError as exc:
        notes[route] = f"not understood: {one_line(exc, 160)}"
        return None


def read_answers(answers: dict, notes: dict) -> dict:
    """The identity fields the server's answers give, with "sources" naming the route of each."""
    said: dict = {}
    src: dict = {}

    def put(field: str, value, route: str) -> None:
        if value not in (None, "") and field not in said:
            said[field], src[field] = value, route

    for route, (status, body) in answers.items():
        if status != 200:
            notes[route] = f"HTTP {status}" if status else one_line(body, 160)
    ok = {r: b for r, (s, b) in answers.items() if s == 200}
    if "/get_server_info" in ok and (sg := _parsed(SglangServerInfo, ok["/get_server_info"], "/get_server_info", notes)):
        if sg.model_path or sg.tp_size:
            put("engine", "sglang", "/get_server_info")
            for field, value in (("engine_version", sg.version), ("model", sg.model_path), ("dtype", sg.dtype),
                                 ("quantization", sg.quantization), ("kv_cache_dtype", sg.kv_cache_dtype),
                                 ("tensor_parallel", sg.tp_size), ("pipeline_parallel", sg.pp_size),
                                 ("data_parallel", sg.dp_size), ("expert_parallel", sg.ep_size),
                                 ("max_model_len", sg.context_length)):
                put(field, value, "/get_server_info")
    if "/get_model_info" in ok and (mi := _parsed(SglangModelInfo, ok["/get_model_info"], "/get_model_info", notes)):
        put("model", mi.model_path, "/get_model_info")
        put("model_revision", mi.weight_version, "/get_model_info")
    if "/info" in ok and (tgi := _parsed(TgiInfo, ok["/info"], "/info", notes)):
        put("engine", "tgi", "/info")
        for field, value in (("engine_version", tgi.version), ("model", tgi.model_id), ("model_revision", tgi.model_sha),
                             ("dtype", tgi.model_dtype), ("max_model_len", tgi.max_total_tokens)):
            put(field, value, "/info")
    if "/metrics" in ok:
        try:
            text = ok["/metrics"].decode("utf-8")
        except UnicodeDecodeError:
            notes["/metrics"], text = "not UTF-8", ""
        gauges, model_name, prefixes = config_gauges(text)
        engine = next((p for p in ("vllm", "sglang", "gpuparity_demo") if p in prefixes), None)
        if engine:
            put("engine", engine.replace("_", "-"), "/metrics")
        merged = {k: v for labels in gauges.values() for k, v in labels.items()}
        for field, names in (("model", ("model", "model_name", "served_model_name")), ("dtype", ("dtype",)),
                             ("quantization", ("quantization",)), ("kv_cache_dtype", ("cache_dtype", "kv_cache_dtype")),
                             ("tensor_parallel", ("tensor_parallel_size", "tp_size")),
                             ("pipeline_parallel", ("pipeline_parallel_size", "pp_size")),
                             ("data_parallel", ("data_parallel_size", "dp_size")),
                             ("expert_parallel", ("expert_parallel_size", "ep_size"))):
            put(field, next((merged[n] for n in names if merged.get(n) not in (None, "", "None")), None), "/metrics")
        put("model", model_name, "/metrics")
        if gauges:
            said["config_gauges"] = gauges
    if "/version" in ok and (ver := _parsed(VersionInfo, ok["/version"], "/version", notes)):
        put("engine_version", ver.version, "/version")
    return {**said, "sources": src}


def build_identity(answers: dict | None, cards: list, declared: dict, launch: dict | None) -> dict:
    """info.server_identity from the server's answers (ask), its /v1/models cards, the user's
    declaration {"engine", "server_flags", "gpus"} and the launch record (or None)."""
    notes: dict = {}
    ident = read_answers(answers or {}, notes)
    src = ident.pop("sources")
    card = cards[0] if cards else None
    if card is not None:
        for field, value in (("model", card.root), ("max_model_len", card.max_model_len)):
            if value not in (None, "") and field not in ident:
                ident[field], src[field] = value, "/v1/models"
        if card.owned_by in ("vllm", "sglang") and "engine" not in ident:
            ident["engine"], src["engine"] = card.owned_by, "/v1/models owned_by"
    conflicts = []
    said = dict(flag_fields(split_command(declared["server_flags"])) if declared.get("server_flags") else {})
    if declared.get("engine"):
        name, _, version = str(declared["engine"]).strip().partition(" ")
        said.update(engine=name.lower(), **({"engine_version": version.strip()} if version.strip() else {}))
    if declared.get("gpus"):
        said["gpus"] = declared["gpus"]
    # a model card's id may be an alias (--served-model-name): below the path a launch command loads
    layers = [("launch command", flag_fields((launch or {}).get("command") or [])),
              ("/v1/models", {"model": card.id} if card is not None else {}), ("declared", said)]
    for where, fields in layers:
        for field, value in fields.items():
            if field not in ident:
                ident[field], src[field] = value, where
            elif _norm(field, value) != _norm(field, ident[field]) and where == "declared":
                conflicts.append(f"{field}: the server says {ident[field]}, declared {value}")
    if launch and launch.get("gpus") and "gpus" not in ident:
        ident["gpus"], src["gpus"] = launch["gpus"], "recipe"
    for field in ("tensor_parallel", "pipeline_parallel", "data_parallel", "expert_parallel", "gpus"):
        if field in ident and ident[field] != "enabled":
            ident[field] = norm_int(ident[field]) if norm_int(ident[field]) is not None else ident[field]
    kept = {k: v for k, v in (launch or {}).items() if k != "status_file"}     # a temporary file: not evidence
    ident.update(sources=src, asked=notes or None, conflicts=conflicts or None,
                 declared={k: v for k, v in declared.items() if v} or None, launch=kept or None)
    return ident


def _norm(field: str, value):
    """A field as identities compare it (results/server_identity.comparable: a model by its name
    below any path), text in any case; "enabled" (a parallelism without its size) as it is."""
    if value == "enabled":
        return value
    found = comparable({field: value}, field)
    return found.strip().lower() if isinstance(found, str) else found
