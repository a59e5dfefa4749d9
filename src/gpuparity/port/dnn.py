"""cuDNN -> MIOpen: the calls whose MIOpen counterpart takes other arguments.

MIOpen has no filter descriptor (a filter is a tensor descriptor), takes the convolution
mode first and no compute type, puts beta and the output before the workspace in the
convolution calls, swaps x/w (and dy/x) in the workspace queries and backward calls, has
no NaN option for pooling and activation, and an activation descriptor holds alpha, beta
and gamma instead of one coefficient. The argument orders come from MIOpen's miopen.h.
A call whose shape is not the expected one keeps its CUDA name and is listed with the
reason (a plain rename would compile into a wrong call).

MIOpen's LRN descriptor holds the mode (cuDNN passes it to the forward call), and its
forward, like its pooling, says whether to keep a workspace for the backward pass.

The algorithm-performance structs differ in their members (`algo` is `fwd_algo`,
`bwd_data_algo` or `bwd_weights_algo`; MIOpen lists only algorithms that ran, so it has no
`status`): `perf_members` renames them on variables declared with those types.
"""

from __future__ import annotations

from typing import Callable

from gpuparity.port.call_site import Args, CallSite, Refused, Rewrite, arg_texts, token_of
from gpuparity.port.tokens import Token

Build = Callable[[CallSite, Args, list[str]], "tuple[list[str], str] | Refused | None"]


def _args(counts: tuple[int, ...], build: Build) -> Rewrite:
    """A rewrite that rebuilds the argument list: build gets the translated argument texts
    and returns (new texts, note), a refusal, or None (shape not recognised). A call refused
    or not recognised keeps its CUDA name and its arguments as written (no half-renamed call)."""
    def rewrite(site: CallSite, i: int, args: Args, close: int) -> str | None:
        texts = arg_texts(site, args) if len(args) in counts else None
        built = None if texts is None else build(site, args, texts)
        if built is None or isinstance(built, Refused):
            site.keep(args)
            return built
        new, note = built
        site.rebuild(args, new)
        for k, text in enumerate(texts):  # a dropped argument's CUDA names count as ported
            if not any(text in kept for kept in new):
                site.consume(args[k])
        return note
    return rewrite


def _order(*order: int, note: str) -> Build:
    return lambda site, args, a: ([a[k] for k in order], note)


def _nchw(site: CallSite, rng: tuple[int, int]) -> Refused | str:
    """MIOpen's 4-d and N-d descriptor calls are NCHW: refuse NHWC, note a format variable."""
    fmt = token_of(site, rng)
    if fmt in ("CUDNN_TENSOR_NHWC", "CUDNN_TENSOR_NCHW_VECT_C"):
        return Refused(f"{fmt}: miopenSet4dTensorDescriptor is NCHW; describe the layout with "
                       "miopenSetNdTensorDescriptorWithLayout or strides (miopenSet4dTensorDescriptorEx)")
    return "" if fmt == "CUDNN_TENSOR_NCHW" else f" (format '{site.arg(rng)}' dropped: MIOpen's is NCHW)"


def _tensor4d(site: CallSite, args: Args, a: list[str]):
    # (desc, format, dataType, n, c, h, w) -> (desc, dataType, n, c, h, w)
    fmt = _nchw(site, args[1])
    return fmt if isinstance(fmt, Refused) else ([a[0], *a[2:]], "tensor format dropped (NCHW)" + fmt)


def _filter4d(site: CallSite, args: Args, a: list[str]):
    # (desc, dataType, format, k, c, h, w) -> (desc, dataType, k, c, h, w): a filter is a tensor
    fmt = _nchw(site, args[2])
    if isinstance(fmt, Refused):
        return fmt
    return [a[0], a[1], *a[3:]], "filter set as an NCHW tensor descriptor (MIOpen has no filter descriptor)" + fmt


def _filter_nd(site: CallSite, args: Args, a: list[str]):
    # (desc, dataType, format, nbDims, dims) -> (desc, dataType, nbDims, dims, null strides: packed)
    fmt = _nchw(site, args[2])
    if isinstance(fmt, Refused):
        return fmt
    return [a[0], a[1], a[3], a[4], site.null], "filter set as a packed tensor descriptor" + fmt


def _conv_mode(site: CallSite, rng: tuple[int, int]) -> Refused | None:
    if token_of(site, rng) == "CUDNN_CONVOLUTION":
        return Refused("CUDNN_CONVOLUTION flips the filter; MIOpen's miopenConvolution is cross-correlation: "
                       "flip the filter by hand or use CUDNN_CROSS_CORRELATION")
    return None


def _conv2d(site: CallSite, args: Args, a: list[str]):
    # (conv, pad_h, pad_w, u, v, dil_h, dil_w, mode[, computeType]) -> (conv, mode, pad_h, ..., dil_w)
    refused = _conv_mode(site, args[7])
    if refused:
        return refused
    note = "mode moved second" + ("; compute type dropped (MIOpen infers it from the tensors)" if len(a) == 9 else "")
    return [a[0], a[7], *a[1:7]], note


def _conv_nd(site: CallSite, args: Args, a: list[str]):
    # (conv, n, padA, strideA, dilationA, mode, computeType) -> (conv, n, padA, strideA, dilationA, mode)
    refused = _conv_mode(site, args[5])
    return refused or (a[:6], "compute type dropped (MIOpen infers it from the tensors)")


def _activation(site: CallSite, args: Args, a: list[str]):
    # (desc, mode, nanOpt, coef) -> (desc, mode, alpha, beta, gamma). MIOpen's tanh is
    # beta * tanh(alpha * x): 1, 1; clipped ReLU's ceiling and ELU's alpha are cuDNN's coef.
    mode = token_of(site, args[1])
    if mode == "CUDNN_ACTIVATION_TANH":
        alpha = "1.0"
    elif mode.startswith("CUDNN_"):  # the other modes read alpha or nothing
        alpha = a[3]
    else:  # a variable: decided when it runs
        alpha = f"(({a[1]}) == miopenActivationTANH ? 1.0 : ({a[3]}))"
    return [a[0], a[1], alpha, "1.0", "1.0"], "NaN option dropped; coef -> alpha (beta, gamma = 1)"


def _max_count(count: int, what: str) -> Rewrite:
    """cudnnGetConvolution*AlgorithmMaxCount(handle, &n): n = MIOpen's algorithm count."""
    def rewrite(site: CallSite, i: int, args: Args, close: int) -> str | None:
        if len(args) != 2 or args[1][0] > args[1][1]:
            return None
        site.consume(args[0])
        site.replace_call(i, close, f"(*({site.translated_arg(args[1])}) = {count}, miopenStatusSuccess)")
        return f"MIOpen has {count} {what} algorithms: the count is set to {count}"
    return rewrite


def _math_type(site: CallSite, i: int, args: Args, close: int) -> str | None:
    if len(args) != 2:
        return None
    site.consume(args[1])
    site.replace_call(i, close, "miopenStatusSuccess")
    return "MIOpen chooses its own math (no tensor-op setting): call replaced by miopenStatusSuccess"


def _append(extra: Callable[[CallSite], list[str]], note: str) -> Build:
    return lambda site, args, a: ([*a, *extra(site)], note)


def _false(site: CallSite) -> str:
    return "0" if site.c_only else "false"


def _void_args(*positions: int, note: str) -> Build:
    """MIOpen takes some read-only arguments as void* (not const void*): cast them."""
    def build(site: CallSite, args: Args, a: list[str]):
        return [f"(void*)({t})" if k in positions else t for k, t in enumerate(a)], note
    return build


_CONST_NOTE = "alpha, beta, scale, bias (and mean, variance) cast to void* (MIOpen's parameter types)"
_FIND_NOTE = ("exhaustiveSearch = false added (MIOpen still times each applicable algorithm, as cuDNN's Find "
              "does); the perf struct's algo member is fwd_algo / bwd_data_algo / bwd_weights_algo")

def _get_rnn(site: CallSite, i: int, args: Args, close: int) -> str | None:
    """cudnnGetRNNDescriptor_v6(handle, desc, &h, &n, &drop, &in, &dir, &mode, &algo, &type) ->
    miopenGetRNNDescriptor_V2(desc, ..., &mode, &bias, &algo, &type): no handle, and a bias mode
    MIOpen also returns (into a temporary)."""
    texts = arg_texts(site, args) if len(args) == 10 else None
    if texts is None or site.c_only:
        return None
    a = texts[1:]
    site.consume(args[0])
    site.replace_call(i, close, "[&]() { miopenRNNBiasMode_t bias_; return miopenGetRNNDescriptor_V2("
                      + ", ".join([*a[:7], "&bias_", *a[7:]]) + "); }()")
    return "handle dropped; the bias mode MIOpen also returns goes to a temporary"


DNN_REWRITES: dict[str, Rewrite] = {
    # RNNs: MIOpen's descriptor calls take no handle and name the bias mode (cuDNN v6 RNNs have biases)
    "cudnnSetRNNDescriptor_v6": _args((10,), lambda site, args, a: (
        [*a[1:8], "miopenRNNwithBias", *a[8:]], "handle dropped; bias mode miopenRNNwithBias added (cuDNN's RNNs "
                                               "have biases)")),
    "cudnnGetRNNDescriptor_v6": _get_rnn,
    "cudnnRNNBackwardWeights": _args((15,), _order(0, 1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 9, 10, 13, 14, note=(
        "dwDesc, dw before the workspace (MIOpen's order)"))),
    "cudnnSetTensor4dDescriptor": _args((7,), _tensor4d),
    "cudnnSetFilter4dDescriptor": _args((7,), _filter4d),
    "cudnnSetFilterNdDescriptor": _args((5,), _filter_nd),
    "cudnnSetConvolution2dDescriptor": _args((8, 9), _conv2d),
    "cudnnSetConvolutionNdDescriptor": _args((7,), _conv_nd),
    "cudnnSetConvolutionMathType": _math_type,
    # workspace queries: MIOpen takes w before x (dy before w/x) and no algorithm
    "cudnnGetConvolutionForwardWorkspaceSize": _args((7,), _order(0, 2, 1, 3, 4, 6, note=(
        "x and w descriptors swapped, algorithm dropped (MIOpen returns the largest workspace of its algorithms)"))),
    "cudnnGetConvolutionBackwardDataWorkspaceSize": _args((7,), _order(0, 2, 1, 3, 4, 6, note=(
        "w and dy descriptors swapped, algorithm dropped"))),
    "cudnnGetConvolutionBackwardFilterWorkspaceSize": _args((7,), _order(0, 2, 1, 3, 4, 6, note=(
        "x and dy descriptors swapped, algorithm dropped"))),
    # the calls: beta and the output before the workspace
    "cudnnConvolutionForward": _args((13,), _order(0, 1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 8, 9, note=(
        "workspace moved last (after beta, yDesc, y)"))),
    "cudnnConvolutionBackwardData": _args((13,), _order(0, 1, 4, 5, 2, 3, 6, 7, 10, 11, 12, 8, 9, note=(
        "dy before w; workspace moved last"))),
    "cudnnConvolutionBackwardFilter": _args((13,), _order(0, 1, 4, 5, 2, 3, 6, 7, 10, 11, 12, 8, 9, note=(
        "dy before x; workspace moved last"))),
    "cudnnFindConvolutionForwardAlgorithmEx": _args((13,), _append(lambda s: [_false(s)], _FIND_NOTE)),
    "cudnnFindConvolutionBackwardDataAlgorithmEx": _args((13,), lambda site, args, a: (
        [a[0], a[3], a[4], a[1], a[2], *a[5:], _false(site)], "dy before w; " + _FIND_NOTE)),
    "cudnnFindConvolutionBackwardFilterAlgorithmEx": _args((13,), lambda site, args, a: (
        [a[0], a[3], a[4], a[1], a[2], *a[5:], _false(site)], "dy before x; " + _FIND_NOTE)),
    "cudnnGetConvolutionForwardAlgorithmMaxCount": _max_count(5, "forward"),
    "cudnnGetConvolutionBackwardDataAlgorithmMaxCount": _max_count(5, "backward-data"),
    "cudnnGetConvolutionBackwardFilterAlgorithmMaxCount": _max_count(4, "backward-weights"),
    # pooling: no NaN option; the forward says whether to keep indices for a backward pass
    "cudnnSetPooling2dDescriptor": _args((9,), _order(0, 1, 3, 4, 5, 6, 7, 8, note="NaN option dropped")),
    "cudnnGetPooling2dDescriptor": _args((9,), _order(0, 1, 3, 4, 5, 6, 7, 8, note=(
        "NaN option dropped (its variable is left unset)"))),
    "cudnnSetPoolingNdDescriptor": _args((7,), _order(0, 1, 3, 4, 5, 6, note="NaN option dropped")),
    "cudnnGetPoolingNdDescriptor": _args((8,), _order(0, 1, 2, 4, 5, 6, 7, note=(
        "NaN option dropped (its variable is left unset)"))),
    "cudnnPoolingForward": _args((8,), lambda site, args, a: (
        [*a, _false(site), site.null, "0"], "do_backward = false, no workspace (inference; a pooling backward "
                                            "needs do_backward = true and a workspace)")),
    "cudnnSetActivationDescriptor": _args((4,), _activation),
    # LRN: the mode moves from the forward call into the descriptor (cuDNN has one, cross-channel)
    "cudnnSetLRNDescriptor": _args((5,), lambda site, args, a: (
        [a[0], "miopenLRNCrossChannel", *a[1:]], "mode miopenLRNCrossChannel added (MIOpen's descriptor holds it; "
                                                 "cuDNN passes it to cudnnLRNCrossChannelForward)")),
    "cudnnLRNCrossChannelForward": _args((9,), lambda site, args, a: (
        [a[0], a[1], *a[3:], _false(site), site.null],
        "lrnMode dropped (the descriptor holds miopenLRNCrossChannel); do_backward = false, no workspace "
        "(inference; a backward pass needs do_backward = true and miopenLRNGetWorkSpaceSize bytes)")),
    # softmax: algorithm and mode last (MIOpen's *_V2)
    "cudnnSoftmaxForward": _args((9,), _order(0, 3, 4, 5, 6, 7, 8, 1, 2, note=(
        "algorithm and mode moved last (MIOpen order)"))),
    "cudnnSoftmaxBackward": _args((11,), _order(0, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2, note=(
        "algorithm and mode moved last (MIOpen order)"))),
    # batch norm: the same order; MIOpen's forward calls take void* where cuDNN's take const void*
    "cudnnBatchNormalizationForwardTraining": _args((17,), _void_args(2, 3, 9, 10, note=_CONST_NOTE)),
    "cudnnBatchNormalizationForwardInference": _args((14,), _void_args(2, 3, 9, 10, 11, 12, note=_CONST_NOTE)),
}

# ---------------------------------------------------------------- perf struct members

PERF_TYPES = {
    "cudnnConvolutionFwdAlgoPerf_t": "fwd_algo", "cudnnConvolutionFwdAlgoPerfStruct": "fwd_algo",
    "cudnnConvolutionBwdDataAlgoPerf_t": "bwd_data_algo", "cudnnConvolutionBwdDataAlgoPerfStruct": "bwd_data_algo",
    "cudnnConvolutionBwdFilterAlgoPerf_t": "bwd_weights_algo",
    "cudnnConvolutionBwdFilterAlgoPerfStruct": "bwd_weights_algo",
}
_NO_MEMBER = {"mathType": "MIOpen picks the math itself", "determinism": "MIOpen reports no determinism"}
_SKIP = {"*", "&", "&&", "const", "volatile", "__restrict__", ">", "::"}


def _declared(toks: list[Token]) -> dict[str, str]:
    """Variables declared with a perf type (also std::vector<T> v, T* p, T a[8], b) -> member."""
    out: dict[str, str] = {}
    n = len(toks)
    for i, t in enumerate(toks):
        member = PERF_TYPES.get(t.text) if t.kind == "id" else None
        if member is None:
            continue
        j = i + 1
        while j < n:
            while j < n and (toks[j].text in _SKIP or toks[j].kind == "comment"):
                j += 1
            if j >= n or toks[j].kind != "id":
                break
            out[toks[j].text] = member
            depth, j = 0, j + 1  # skip [size], = init ... to the next declarator
            while j < n:
                s = toks[j].text
                if s in ("(", "[", "{"):
                    depth += 1
                elif s in (")", "]", "}"):
                    if depth == 0:
                        break
                    depth -= 1
                elif depth == 0 and s in (",", ";"):
                    break
                j += 1
            if j >= n or toks[j].text != ",":
                break
            j += 1
    return out


def perf_members(site: CallSite) -> tuple[list[tuple[int, str]], list[tuple[int, str, str]]]:
    """Rename perf-struct members on the file's perf variables. Returns (line, note) for each
    rewrite and (line, member, reason) for members MIOpen lacks."""
    toks = site.toks
    names = _declared(toks)
    notes: list[tuple[int, str]] = []
    missing: list[tuple[int, str, str]] = []
    if not names:
        return notes, missing
    n = len(toks)
    for i, t in enumerate(toks):
        if t.kind != "id" or t.text not in names or (i and toks[i - 1].text in (".", "->")):
            continue
        j = i + 1
        if j < n and toks[j].text == "[":  # perf[k].algo
            depth = 0
            while j < n:
                depth += toks[j].text == "["
                depth -= toks[j].text == "]"
                j += 1
                if depth == 0:
                    break
        if j + 1 >= n or toks[j].text not in (".", "->") or toks[j + 1].kind != "id":
            continue
        member = toks[j + 1]
        if member.text == "algo":
            site.ed.replace(member.start, member.end, names[t.text])
            notes.append((member.line, f"{t.text}.algo -> {names[t.text]} (MIOpen's perf struct)"))
        elif member.text == "status":
            site.ed.replace(t.start, member.end, "miopenStatusSuccess")
            notes.append((member.line, f"{t.text}.status -> miopenStatusSuccess (MIOpen lists only algorithms "
                                       "that ran)"))
        elif member.text in _NO_MEMBER:
            missing.append((member.line, f"{t.text}.{member.text}", _NO_MEMBER[member.text]))
    return notes, missing
