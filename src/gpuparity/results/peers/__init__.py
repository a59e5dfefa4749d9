"""Result files of the serving clients people already run, imported as gpuparity run documents:
`vllm bench serve --save-result [--save-detailed]` (vllm_bench.py), guidellm's JSON report
(guidellm.py) and aiperf's profile export (aiperf.py). Each is read bounded, checked against its
own pydantic model, turned into serving results (common.py: figures redone from the per-request
data where the file has it), then through the gate every document passes
(results/document.validate_run). `gpuparity import` calls `load_import_file` for every file.
"""

from __future__ import annotations


def load_import_file(path: str, recompute: bool = False, declared=None) -> dict:
    """A run document from `path`: gpuparity's own (as exported or spooled) or a peer's result file.
    declared: common.Declared, what the user says of a peer's server (its GPUs, a label, its stack);
    refused for gpuparity's own documents, which state their own."""
    import os

    from gpuparity.errors import UserError
    from gpuparity.results.document import validate_run
    from gpuparity.results.peers import aiperf, guidellm, vllm_bench
    from gpuparity.results.peers.common import NOTHING_DECLARED
    from gpuparity.results.peers.fields import no_infinity

    declared = declared or NOTHING_DECLARED
    from gpuparity.validate import decode_text, parse_json, read_bounded

    data = read_bounded(path, None, "run file")
    try:
        obj = parse_json(data, path)
    except UserError as exc:              # not one JSON value: aiperf's records (JSON lines)?
        line = next((ln for ln in decode_text(data, path).splitlines()[:1] if ln.strip()), "")
        try:
            first = parse_json(line, path) if line else None
        except UserError:
            raise exc from None
        if not aiperf.looks_like_records(first):
            raise exc from None
        records = aiperf.read_records(data, path)
        aggregate = aiperf.siblings(path)[1]
        summary = parse_json(read_bounded(aggregate, None, "aiperf aggregate"), aggregate) \
            if os.path.isfile(aggregate) else None
        no_infinity(summary, aggregate)
        return validate_run(aiperf.convert(summary, records, path, data, declared), f"{path} (aiperf)", recompute)
    if vllm_bench.looks_like(obj) or guidellm.looks_like(obj) or aiperf.looks_like_summary(obj):
        no_infinity(obj, path)
    if vllm_bench.looks_like(obj):
        return validate_run(vllm_bench.convert(obj, path, data, declared), f"{path} ({vllm_bench.TOOL})", recompute)
    if guidellm.looks_like(obj):
        return validate_run(guidellm.convert(obj, path, data, declared), f"{path} (guidellm)", recompute)
    if aiperf.looks_like_summary(obj):
        found = aiperf.siblings(path)[0]
        records, raw = None, data
        if os.path.isfile(found):        # the records beside it: the run's id is theirs (either file, one run)
            raw = read_bounded(found, None, "aiperf records")
            records = aiperf.read_records(raw, found)
        return validate_run(aiperf.convert(obj, records, path, raw, declared), f"{path} (aiperf)", recompute)
    if declared.given():
        raise UserError(f"{path}: a gpuparity run states its own GPUs, label and platform: --gpus, --label, "
                        "--platform and --gpu-model are for the peers' files (vllm bench serve, guidellm, aiperf)")
    return validate_run(obj, path, recompute)      # gpuparity's own; else its error names what one needs
