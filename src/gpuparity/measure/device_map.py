"""Which NVML / amdsmi device is the torch device this process measures.

By identity first: the PCI bus id torch reports, then the device UUID. Only then by the
visibility lists, composed as the runtimes compose them: on ROCm, ROCR_VISIBLE_DEVICES picks
physical devices (indices or GPU-<uuid>), then HIP_VISIBLE_DEVICES (else CUDA_VISIBLE_DEVICES)
indexes into that list; on CUDA, CUDA_VISIBLE_DEVICES (indices, GPU-/MIG- UUIDs). A list is read
up to its first entry the runtime would stop at. A physical index is an NVML index only where
CUDA enumerates in PCI order as NVML does (CUDA_DEVICE_ORDER=PCI_BUS_ID, or one device), and an
amdsmi index only through amdsmi's own HIP id (amdsmi 6.4+): amdsmi's order differs from HIP's on
some MI300X platforms.
"""

from __future__ import annotations

import os
import re

UUID_TOKEN = re.compile(r"^(GPU|MIG)-[0-9A-Za-z-]+$")


def _entries(value: str) -> list[int | str]:
    out: list[int | str] = []
    for item in value.split(","):
        item = item.strip()
        if re.fullmatch(r"\d+", item):
            out.append(int(item))
        elif UUID_TOKEN.match(item):
            out.append(item)
        else:                 # "-1", junk: the runtime stops here (the devices listed so far stay)
            break
    return out


def visible(backend: str, env=None) -> list[int | str] | None:
    """The physical devices (index or UUID) the runtime shows, in its order; None: no list set."""
    env = os.environ if env is None else env
    if backend == "rocm":
        base: list[int | str] | None = None
        rocr = env.get("ROCR_VISIBLE_DEVICES")
        if rocr is not None:
            base = _entries(rocr)
        hip = env.get("HIP_VISIBLE_DEVICES")
        hip = hip if hip is not None else env.get("CUDA_VISIBLE_DEVICES")
        if hip is None:
            return base
        picks = _entries(hip)
        if base is None:
            return picks
        return [base[p] if isinstance(p, int) and p < len(base) else p for p in picks
                if not (isinstance(p, int) and p >= len(base))]
    value = env.get("CUDA_VISIBLE_DEVICES")
    return None if value is None else _entries(value)


def physical(torch_index: int, backend: str, env=None) -> int | str | None:
    """The physical device (index or UUID) behind torch device `torch_index`; None when the lists
    leave it out."""
    shown = visible(backend, env)
    if shown is None:
        return torch_index
    return shown[torch_index] if 0 <= torch_index < len(shown) else None


def torch_identity(torch_index: int) -> dict:
    """{"bus_id": "0000:3b:00.0", "uuid": "..."} of a torch device where torch reports them."""
    out: dict = {}
    try:
        import torch

        p = torch.cuda.get_device_properties(torch_index)
    except Exception:  # noqa: BLE001 - no torch, no device: nothing known
        return out
    try:
        out["bus_id"] = f"{p.pci_domain_id:04x}:{p.pci_bus_id:02x}:{p.pci_device_id:02x}.0"
    except Exception:  # noqa: BLE001 - older torch: no PCI ids
        pass
    uuid = getattr(p, "uuid", None)
    if uuid is not None:
        text = str(uuid).strip()
        if text and text.strip("0-"):
            out["uuid"] = text
    return out


def same_uuid(a: str | None, b: str | None) -> bool:
    """One UUID however it is written (NVML's GPU- prefix, torch's bare form, dashes, case)."""
    def norm(text):
        text = (text or "").strip().lower()
        for prefix in ("gpu-", "mig-"):
            text = text.removeprefix(prefix)
        return text.replace("-", "")

    return bool(norm(a)) and norm(a) == norm(b)


def refs(torch_index: int, backend: str, env=None) -> list[dict]:
    """The ways to find the management device of a torch device, most certain first: its PCI bus
    id, its UUID, the visibility lists' UUID, then the physical index (each source decides whether
    an index is trustworthy there)."""
    env = os.environ if env is None else env
    ident = torch_identity(torch_index)
    out = [{"bus_id": ident["bus_id"]}] if ident.get("bus_id") else []
    if ident.get("uuid"):
        out.append({"uuid": ident["uuid"]})
    shown = physical(torch_index, backend, env)
    if isinstance(shown, str):
        out.append({"uuid": shown})
    elif isinstance(shown, int):
        out.append({"index": shown, "pci_order": env.get("CUDA_DEVICE_ORDER") == "PCI_BUS_ID"})
    return out
