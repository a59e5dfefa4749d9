"""The power a serving point is charged: its server's GPUs, summed, where they are this machine's;
otherwise none, with the reason (a remote server's power is never this machine's idle GPU).

- The server is here when gpuparity launched it (--serve-cmd / --serve-recipe) or its URL names
  this machine (a loopback address, this host's name).
- Its GPUs: those its launch environment makes visible (CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES,
  ROCR_VISIBLE_DEVICES as integers), the first `gpus` of them where --set gpus= / the recipe says
  how many; a server not launched here but on this machine with --set gpus=N: the first N GPUs
  this process sees (said in the telemetry's "scope"). Without a GPU count or visible devices for
  a server not launched here, nothing is charged.
- On a CPU machine the server shares this CPU with the client: its package power (RAPL) is the
  run's sampler, as for any other workload.
The chosen sampler measures every one of those devices over the point's window; energy and power
add up over them (measure/energy.analyze); the telemetry says which devices ("scope").
"""

from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit

from gpuparity.measure.telemetry import NullSampler

LOOPBACK = ("localhost", "127.0.0.1", "::1", "0.0.0.0", "ip6-localhost")


def is_here(url: str) -> bool:
    """Whether the URL names this machine (a loopback address or this host's own name)."""
    host = (urlsplit(url).hostname or "").lower()
    if host in LOOPBACK or host.startswith("127."):
        return True
    names = {socket.gethostname().lower(), socket.getfqdn().lower()}
    return host in names


def _physical(shown: list | None, count: int | None) -> list[int] | None:
    """The first `count` physical device indices the server's runtime shows (measure.device_map.visible;
    None where it names them by UUID); without a list: 0..count-1."""
    if shown is None:
        return list(range(count)) if count else None
    if not all(isinstance(v, int) for v in shown):
        return None
    return shown[:count] if count else shown


def _server_env(launch: dict | None) -> dict:
    """The environment the server's runtime reads its visible devices from (a launched server's own)."""
    return dict(os.environ, **((launch or {}).get("visible_devices") or {}))


def server_devices(url: str, launch: dict | None, gpus: int | None, backend: str) -> tuple[list[int] | None, str]:
    """(physical indices of the server's GPUs, how they were found), or (None, why none are charged)."""
    if not (launch or is_here(url)):
        host = urlsplit(url).hostname or url
        return None, (f"the server at {host} is not this machine: its GPUs' power is not measured here, so no "
                      "per-watt figure (run gpuparity on the server's machine, or launch it with --serve-cmd)")
    from gpuparity.measure.device_map import visible

    shown = visible(backend, _server_env(launch))       # ROCR then HIP/CUDA lists, composed as the runtime does
    if not launch and not gpus:
        return None, ("the server's GPUs are not known: --set gpus=N charges the first N GPUs this machine shows "
                      "(or launch it with --serve-cmd and its visible devices)")
    found = _physical(shown, gpus)
    if found is None:
        return None, (f"the server's visible devices are not integers ({','.join(map(str, shown or []))}): its GPUs "
                      "cannot be read by index")
    if not found:               # launched without a count or a device list: every GPU it can see
        return None, "the server's GPUs are not known: give the recipe gpus: N or its visible devices"
    how = "launched by gpuparity" if launch else f"--set gpus={gpus}, the first {gpus} GPUs this machine shows"
    return found, f"the server's GPUs {','.join(map(str, found))} ({how})"


def server_sampler(url: str, launch: dict | None, gpus: int | None, fingerprint: dict, run_sampler):
    """(sampler, scope): the sampler over the server's GPUs (NVML / amdsmi), the run's own on a CPU
    machine whose server is here, or a NullSampler saying why nothing is charged."""
    from gpuparity.measure.samplers import AmdsmiSource, NvmlSource, Unavailable
    from gpuparity.measure.telemetry import ThreadedSampler

    backend = (fingerprint or {}).get("backend", "cpu")
    if backend not in ("cuda", "rocm"):
        if launch or is_here(url):
            return run_sampler, "this machine's CPU package (the server runs here, beside the client)"
        devices, why = server_devices(url, launch, gpus, backend)
        return NullSampler(why), why
    devices, why = server_devices(url, launch, gpus, backend)
    if devices is None:
        return NullSampler(why), why
    try:
        # an index is the management library's only where the runtime counts in PCI order (measure.device_map)
        pci_order = _server_env(launch).get("CUDA_DEVICE_ORDER") == "PCI_BUS_ID"
        source = (NvmlSource if backend == "cuda" else AmdsmiSource)(
            devices=[[{"index": i, "pci_order": pci_order}] for i in devices])
    except Unavailable as exc:
        return NullSampler(f"{why}: {exc}"), why
    return ThreadedSampler(source), why
