"""2-D convolution forward and backward at ResNet-50 and diffusion-UNet layer shapes.

torch.nn.functional.conv2d dispatches to cuDNN on NVIDIA, MIOpen on AMD and oneDNN on CPU
(the library is recorded in info). cuDNN/MIOpen autotuning is on (benchmark mode), as in training.
FLOP: forward = 2*N*Cout*Hout*Wout*Cin*kh*kw; backward = 2 x forward (grad input + grad weight).
"""

from __future__ import annotations

from gpuparity.errors import UserError
from gpuparity.results.work import conv_flop, conv_out  # noqa: F401  (the work, one function: import checks it)
from gpuparity.workloads.base import Context, Prepared, Workload
from gpuparity.workloads.dtypes import TOLERANCE, compute_dtype, rel_error, torch_dtype

# layer -> (cin, cout, hw, kernel, stride); ResNet-50 at 224x224, SD-1.5 UNet at a 64x64 latent.
LAYERS = {
    "resnet50": {
        "conv1": (3, 64, 224, 7, 2), "res2_3x3": (64, 64, 56, 3, 1), "res2_1x1": (256, 64, 56, 1, 1),
        "res4_3x3": (256, 256, 14, 3, 1), "res5_3x3": (512, 512, 7, 3, 1),
    },
    "unet": {"down1": (320, 320, 64, 3, 1), "down2": (640, 640, 32, 3, 1), "mid": (1280, 1280, 16, 3, 1)},
}
BATCH = {"resnet50": 64, "unet": 8}
SUITE_LAYERS = {
    "quick": {"resnet50": ("res2_3x3",), "unet": ("down1",)},
    "standard": {"resnet50": ("conv1", "res2_3x3", "res2_1x1", "res4_3x3"), "unet": ("down1", "down2", "mid")},
    "full": {net: tuple(layers) for net, layers in LAYERS.items()},
}
CPU_UNET_HW = 8     # a UNet layer at 64x64 is seconds per call on a CPU


class Conv(Workload):
    name = "conv"
    category = "kernel"
    description = ("conv2d forward/backward at ResNet-50 and SD-UNet layer shapes, NCHW and channels-last "
                   "(cuDNN / MIOpen / oneDNN); TFLOP/s")
    axes = {"net,layer": "resnet50: conv1, res2_3x3, res2_1x1, res4_3x3, res5_3x3; unet: down1, down2, mid",
            "batch,cin,cout,hw,kernel,stride": "layer shape", "channels_last": "true, false",
            "pass": "fwd, bwd", "dtype": "bf16 (fp32 on a CPU without bf16 units)"}
    choices = {"net": tuple(LAYERS), "layer": tuple(dict.fromkeys(name for layers in LAYERS.values() for name in layers)),
               "pass": ("fwd", "bwd")}

    def cases(self, suite: str, ctx: Context) -> list[dict]:
        return [c for dt in ctx.options.get("dtypes") or [compute_dtype(ctx)] for c in self._cases(suite, ctx, dt)]

    def _cases(self, suite: str, ctx: Context, dt: str) -> list[dict]:
        cpu = ctx.device == "cpu"
        out = []
        for net, layer in layer_pairs(suite, ctx.options):
            cin, cout, hw, kernel, stride = LAYERS[net][layer]
            batch = 1 if cpu else BATCH[net]
            if cpu and net == "unet":
                hw = CPU_UNET_HW
            for cl in (True, False):
                for pas in ("fwd", "bwd"):
                    if cpu and suite == "quick" and not _cpu_quick_keep(net, cl, pas):
                        continue
                    out.append({"net": net, "layer": layer, "batch": batch, "cin": cin, "cout": cout,
                                "hw": hw, "kernel": kernel, "stride": stride, "channels_last": cl,
                                "pass": pas, "dtype": dt})
        return out

    def supports(self, params: dict, ctx: Context) -> tuple[bool, str]:
        if params["dtype"] not in ("fp32", "bf16", "fp16"):
            return False, f"conv is measured in fp32, bf16 or fp16, not {params['dtype']}"
        return True, ""

    def prepare(self, params: dict, ctx: Context) -> Prepared:
        return prepare_conv(params, ctx)


def layer_pairs(suite: str, options: dict) -> list[tuple[str, str]]:
    """The (net, layer) pairs a run measures: the suite's, or the ones --set net= / layer= name
    (net alone: that net's suite layers; layer: that layer of whichever net has it). A layer names
    its shape, so each takes one value: a list would cross one layer's name with another's shape."""
    net, layer = (str(options.get(k) or "").strip() for k in ("net", "layer"))
    for key, value in (("net", net), ("layer", layer)):
        if "," in value:
            raise UserError(f"--set {key}={value}: conv takes one {key} per run (a layer's name fixes its shape)")
    pairs = [(n, name) for n, names in LAYERS.items() for name in names
             if (not net or n == net) and (name == layer if layer else name in SUITE_LAYERS[suite][n])]
    if not pairs:
        raise UserError(f"--set net={net} --set layer={layer}: {net}'s layers are {', '.join(LAYERS.get(net, {}))}")
    return pairs


def _cpu_quick_keep(net: str, channels_last: bool, pas: str) -> bool:
    """Quick on a CPU: ResNet forward in both layouts, one backward, one UNet layer."""
    if net == "unet":
        return channels_last and pas == "fwd"
    return pas == "fwd" or channels_last


def conv_library(ctx: Context) -> str:
    return {"cuda": "cuDNN", "rocm": "MIOpen"}.get(ctx.backend, "oneDNN" if ctx.fingerprint.get("mkldnn") else "ATen")


def prepare_conv(p: dict, ctx: Context) -> Prepared:
    import torch
    import torch.nn.functional as F

    dev, dt = ctx.device, p["dtype"]
    tdt = torch_dtype(dt)
    gen = torch.Generator(device="cpu").manual_seed(0)
    fmt = torch.channels_last if p["channels_last"] else torch.contiguous_format
    pad, stride = p["kernel"] // 2, p["stride"]
    x = torch.randn(p["batch"], p["cin"], p["hw"], p["hw"], generator=gen).to(dev, tdt).to(memory_format=fmt)
    w = (torch.randn(p["cout"], p["cin"], p["kernel"], p["kernel"], generator=gen)
         / (p["cin"] * p["kernel"] ** 2) ** 0.5).to(dev, tdt).to(memory_format=fmt)
    teardown = None
    if dev != "cpu":
        prev = (torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32)
        torch.backends.cudnn.benchmark = True
        torch.backends.cudnn.allow_tf32 = False   # fp32 means fp32 (bf16/fp16 are unaffected)

        def teardown():
            torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32 = prev

    bwd = p["pass"] == "bwd"
    x.requires_grad_(bwd)
    w.requires_grad_(bwd)
    grad = None
    if bwd:
        out = F.conv2d(x, w, stride=stride, padding=pad)
        grad = torch.randn(out.shape, generator=gen).to(dev, tdt).to(memory_format=fmt)

        def fn():
            return torch.autograd.grad(out, (x, w), grad, retain_graph=True)
    else:
        def fn():
            with torch.no_grad():
                return F.conv2d(x, w, stride=stride, padding=pad)

    def check():
        # Image 0 in fp64: the output, or grad input (which depends only on image 0's grad output).
        x0 = x.detach()[:1].double().requires_grad_(bwd)
        ref = F.conv2d(x0, w.detach().double(), stride=stride, padding=pad)
        if bwd:
            ref = torch.autograd.grad(ref, x0, grad[:1].double())[0]
            got = fn()[0][:1]
        else:
            got = fn()[:1]
        err = rel_error(got, ref.detach())
        tol = TOLERANCE[dt] * (2.0 if bwd else 1.0)
        return err <= tol, f"relative error {err:.2e} vs fp64 ({'grad input' if bwd else 'output'}, image 0; " \
                           f"tolerance {tol:.0e})"

    info = {"library": conv_library(ctx), "memory_format": "channels_last" if p["channels_last"] else "NCHW"}
    return Prepared(fn=fn, work={"flop": conv_flop(p)}, peak=f"flop:{dt}", check=check, info=info,
                    teardown=teardown)


WORKLOADS = [Conv()]
