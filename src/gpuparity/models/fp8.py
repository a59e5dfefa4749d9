"""fp8 weights and activations for a causal LM, in torch alone: no kernels fetched from a model hub
at run time (clusters without network; the same code path on every vendor).

Every nn.Linear whose dimensions the fp8 GEMM takes (multiples of 16), except the output head, is
replaced by `FP8Linear`: the weight quantised once per output channel, each call's activations
quantised per token (row), multiplied by torch._scaled_mm into the activation dtype. Where the
device has no row-wise scaled GEMM, both use one scale per tensor (recorded). The fp8 format is the
architecture's (float8_e4m3fnuz on gfx942, float8_e4m3fn elsewhere: workloads.dtypes.fp8_dtype_name).
"""

from __future__ import annotations

import torch

SKIP = ("lm_head",)      # the output head stays in the activation dtype, as fp8 serving stacks keep it


def _scale(t: torch.Tensor, fmax: float, rowwise: bool) -> torch.Tensor:
    amax = t.abs().amax(dim=1, keepdim=True) if rowwise else t.abs().amax()
    return (amax.float() / fmax).clamp_min(1e-12)


class FP8Linear(torch.nn.Module):
    def __init__(self, linear: torch.nn.Linear, fp8_dtype: torch.dtype, rowwise: bool):
        super().__init__()
        self.fp8_dtype, self.rowwise = fp8_dtype, rowwise
        self.fmax = float(torch.finfo(fp8_dtype).max)
        self.in_features, self.out_features = linear.in_features, linear.out_features
        w = linear.weight.detach()
        sw = _scale(w, self.fmax, rowwise)                                  # (out, 1) or scalar
        self.register_buffer("weight_fp8", (w.float() / sw).to(fp8_dtype))   # (out, in) row-major
        self.register_buffer("weight_scale", (sw.t() if rowwise else sw).contiguous())   # (1, out) or scalar
        self.bias = linear.bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x2 = x.reshape(-1, self.in_features)
        sx = _scale(x2, self.fmax, self.rowwise)
        xq = (x2.float() / sx).to(self.fp8_dtype)
        out = torch._scaled_mm(xq, self.weight_fp8.t(), scale_a=sx, scale_b=self.weight_scale,
                               out_dtype=x.dtype)
        if self.bias is not None:
            out = out + self.bias
        return out.reshape(*shape[:-1], self.out_features)


def rowwise_supported(fp8_dtype: torch.dtype, device) -> bool:
    """Whether torch._scaled_mm takes per-row / per-column scales here (probed on 16 x 32 x 16)."""
    from gpuparity.models.scaled_mm import fp8_runs

    return fp8_runs(str(device), str(fp8_dtype).removeprefix("torch."), "row")[0]


def quantise(model: torch.nn.Module, fp8_format: str) -> dict:
    """Replace the model's eligible nn.Linear layers in place; what was done, for result info."""
    from gpuparity.models.scaled_mm import fp8_floor

    ok, why = fp8_floor(torch.__version__, None, None, "tensor")     # torch < 2.4's _scaled_mm: (out, amax)
    if not ok:
        raise ValueError(why)
    fdt = getattr(torch, fp8_format)
    device = next(model.parameters()).device
    rowwise = rowwise_supported(fdt, device)
    done, kept = 0, []
    for name, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            if not isinstance(child, torch.nn.Linear):
                continue
            full = f"{name}.{child_name}" if name else child_name
            if child_name in SKIP or child.in_features % 16 or child.out_features % 16:
                kept.append(full)
                continue
            setattr(module, child_name, FP8Linear(child, fdt, rowwise))
            done += 1
    if not done:
        raise ValueError("no linear layer of this model fits the fp8 GEMM (dimensions must be multiples of 16)")
    return {"format": fp8_format, "scaling": "row (weights per channel, activations per token)" if rowwise
            else "tensor", "layers_fp8": done, "layers_kept": kept[:20], "kernel": "torch._scaled_mm"}
