"""Cost model of tools/export_torch.py (standard library only; docs/exporter.md, "Costs").

- `roofline`: the time of an op on a named reference device, max(flops / F, bytes / B).
- `conv_forward`, `conv_backward`: a model of cuDNN's convolution algorithms: for one 2-D
  convolution layer, every algorithm the model admits with its workspace (bytes, a formula of the
  layer shape) and its time (a roofline with a per-algorithm efficiency factor). It is a model,
  not a measurement: nothing here ran on a GPU.

Nothing imports torch here, so the tests can check the formulas by hand.
"""

import math

# The reference device: an NVIDIA V100-SXM2-like GPU, fp32 (peak 15.7 TFLOP/s without tensor cores,
# HBM2 at 900 GB/s). Costs are seconds on this device.
DEVICE = {"name": "NVIDIA V100-SXM2 (reference model, fp32)", "peak_flops": 15.7e12, "bandwidth": 900e9}

# Significant digits kept in the written costs (smaller files; equal inputs give equal bytes).
DIGITS = 6


def rounded(x):
    """x rounded to DIGITS significant digits (0 stays 0)."""
    return float(f"{x:.{DIGITS}g}")


def roofline(flops, bytes_moved, efficiency=1.0, device=DEVICE):
    """Seconds: max(flops / (efficiency * peak_flops), bytes_moved / bandwidth)."""
    return max(flops / (efficiency * device["peak_flops"]), bytes_moved / device["bandwidth"])


# ----------------------------------------------------------------------------- convolution

# Per-algorithm efficiency: the fraction of the device's peak FLOP rate the algorithm's arithmetic
# reaches, relative to the default algorithm (1.0: the default runs at the roofline, like every
# other op of the export). These are the model's assumptions, not measurements.
FWD_ALGOS = ("IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED")
DATA_ALGOS = ("ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED")
FILTER_ALGOS = ("ALGO_0", "ALGO_1", "FFT", "ALGO_3", "WINOGRAD_NONFUSED", "FFT_TILING")
EFFICIENCY = {
    "fwd": {"IMPLICIT_GEMM": 0.75, "IMPLICIT_PRECOMP_GEMM": 1.0, "GEMM": 0.9, "FFT": 0.5, "FFT_TILING": 0.5,
            "WINOGRAD": 0.7, "WINOGRAD_NONFUSED": 0.8},
    "data": {"ALGO_0": 0.75, "ALGO_1": 1.0, "FFT": 0.5, "FFT_TILING": 0.5, "WINOGRAD": 0.7, "WINOGRAD_NONFUSED": 0.8},
    "filter": {"ALGO_0": 0.75, "ALGO_1": 1.0, "ALGO_3": 0.9, "FFT": 0.5, "FFT_TILING": 0.5, "WINOGRAD_NONFUSED": 0.8},
}
# What a framework runs by default: PyTorch (torch.backends.cudnn.benchmark = False, its default)
# takes cuDNN's heuristic choice, which depends on the layer and the cuDNN version and cannot be
# asked without a GPU; the model fixes the implicit-GEMM family's deterministic members.
DEFAULT = {"fwd": "IMPLICIT_PRECOMP_GEMM", "data": "ALGO_1", "filter": "ALGO_1"}
FFT_TILE = 32          # FFT_TILING's tile side (cuDNN: "splits the input into 32x32 tiles")
FFT_MAX_PADDED = 256   # FFT: input height/width plus twice the padding at most 256
INDEX_BYTES = 4        # one int32 offset per (input channel, filter row, filter column)


class ConvLayer:
    """A 2-D convolution: input [N, C, H, W], weight [K, C/groups, R, S], output [N, K, P, Q]."""

    def __init__(self, n, c, h, w, k, r, s, p, q, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
                 bias=False, itemsize=4):
        self.n, self.c, self.h, self.w, self.k, self.r, self.s, self.p, self.q = n, c, h, w, k, r, s, p, q
        self.stride, self.padding, self.dilation = tuple(stride), tuple(padding), tuple(dilation)
        self.groups, self.bias, self.b = groups, bias, itemsize

    # sizes in bytes
    def x_bytes(self):
        return self.b * self.n * self.c * self.h * self.w

    def w_bytes(self):
        return self.b * self.k * (self.c // self.groups) * self.r * self.s

    def y_bytes(self):
        return self.b * self.n * self.k * self.p * self.q

    def macs(self):
        """Multiply-adds of the direct convolution (the same for forward, data and filter gradients)."""
        return self.n * self.k * self.p * self.q * (self.c // self.groups) * self.r * self.s

    def transforms_ok(self):
        """FFT and Winograd: dense (groups 1), stride 1, no dilation (cuDNN's conditions, plus groups 1)."""
        return self.groups == 1 and self.stride == (1, 1) and self.dilation == (1, 1)


def _fft(L, out_h, out_w):
    """FFT over the whole padded plane: (flops, workspace)."""
    hf, wf = L.h + 2 * L.padding[0], L.w + 2 * L.padding[1]
    bins = hf * (wf // 2 + 1)                       # real-to-complex spectrum of one plane
    planes = L.n * L.c + L.k * L.c + L.n * L.k      # transformed: both operands and the result
    fft_flops = 2.5 * hf * wf * math.log2(hf * wf)  # one real 2-D FFT
    flops = planes * fft_flops + 8.0 * bins * L.n * L.k * L.c  # complex multiply-add = 8 flops
    return flops, 8 * bins * planes                 # complex64 spectra


def _fft_tiling(L, out_h, out_w):
    t = FFT_TILE
    tiles = math.ceil(out_h / (t - L.r + 1)) * math.ceil(out_w / (t - L.s + 1))
    bins = t * (t // 2 + 1)
    planes = (L.n * L.c + L.n * L.k) * tiles + L.k * L.c
    flops = planes * 2.5 * t * t * math.log2(t * t) + 8.0 * bins * L.n * L.k * L.c * tiles
    return flops, 8 * bins * planes


def _winograd(L, out_h, out_w, m, fused):
    """Winograd F(m x m, r x r), tile side t = m + r - 1: (flops, workspace)."""
    t = m + L.r - 1
    tiles = math.ceil(out_h / m) * math.ceil(out_w / m)
    planes = (L.n * L.c + L.n * L.k) * tiles + L.k * L.c  # transformed tiles: data, result, filters
    flops = 2.0 * L.n * L.k * L.c * tiles * t * t + 4.0 * t ** 3 * planes
    ws = L.b * t * t * L.k * L.c if fused else L.b * t * t * planes  # fused: only the filters are kept
    return flops, ws


def _pass_algos(L, which):
    """[(name, flops, workspace)] for one pass: 'fwd' (y from x, w), 'data' (dx from dy, w),
    'filter' (dw from x, dy), in cuDNN's enum order, only the algorithms the model admits."""
    direct = 2.0 * L.macs()
    cin = L.c // L.groups
    out_h, out_w = (L.h, L.w) if which == "data" else (L.p, L.q)  # tiled plane: the pass's output
    ok = L.transforms_ok()
    fft_ok = ok and L.h + 2 * L.padding[0] <= FFT_MAX_PADDED and L.w + 2 * L.padding[1] <= FFT_MAX_PADDED \
        and L.r > L.padding[0] and L.s > L.padding[1]
    tiling_ok = ok and L.r <= FFT_TILE and L.s <= FFT_TILE and L.r > L.padding[0] and L.s > L.padding[1]
    wino_ok = ok and (L.r, L.s) == (3, 3)
    wino_nf = {(3, 3): 4, (5, 5): 2}.get((L.r, L.s)) if ok else None  # output tile m: t = 6
    out = []
    names = {"fwd": FWD_ALGOS, "data": DATA_ALGOS, "filter": FILTER_ALGOS}[which]
    for name in names:
        if name == "IMPLICIT_GEMM" or name == "ALGO_0":
            out.append((name, direct, 0))
        elif name == "IMPLICIT_PRECOMP_GEMM" or (name == "ALGO_3" and which == "filter"):
            out.append((name, direct, INDEX_BYTES * cin * L.r * L.s))
        elif name == "ALGO_1":
            # data: deterministic implicit GEMM, no workspace; filter: deterministic reduction over
            # the batch through one partial-sum copy of the filter gradient
            out.append((name, direct, 0 if which == "data" else L.w_bytes()))
        elif name == "GEMM":
            out.append((name, direct, L.b * L.n * L.c * L.r * L.s * L.p * L.q))  # im2col of the batch
        elif name == "FFT" and fft_ok:
            out.append((name, *_fft(L, out_h, out_w)))
        elif name == "FFT_TILING" and tiling_ok:
            out.append((name, *_fft_tiling(L, out_h, out_w)))
        elif name == "WINOGRAD" and wino_ok:
            out.append((name, *_winograd(L, out_h, out_w, 2, fused=True)))
        elif name == "WINOGRAD_NONFUSED" and wino_nf:
            out.append((name, *_winograd(L, out_h, out_w, wino_nf, fused=False)))
    return out


def _pass_io(L, which):
    if which == "fwd":
        return L.x_bytes() + L.w_bytes() + L.y_bytes() + (L.b * L.k if L.bias else 0)
    if which == "data":
        return L.y_bytes() + L.w_bytes() + L.x_bytes()
    return L.x_bytes() + L.y_bytes() + L.w_bytes()


def pass_algorithms(L, which, device=DEVICE):
    """[(name, seconds, workspace)] of one pass: time = max(flops / (eff * F), (io + 2 * ws) / B)
    (the workspace is written once and read once)."""
    io = _pass_io(L, which)
    extra = L.b * L.n * L.k * L.p * L.q if which == "fwd" and L.bias else 0  # the bias add
    return [(name, roofline(flops + extra, io + 2 * ws, EFFICIENCY[which][name], device), ws)
            for name, flops, ws in _pass_algos(L, which)]


def conv_forward(L, device=DEVICE):
    """(implementations, default_name): implementations = [{"name", "cost", "workspace"}] for every
    forward algorithm the model admits; the default's entry is the op's own cost and workspace."""
    impls = [{"name": n, "cost": rounded(t), "workspace": int(ws)} for n, t, ws in pass_algorithms(L, "fwd", device)]
    return impls, DEFAULT["fwd"]


def conv_backward(L, mask, device=DEVICE):
    """convolution_backward computes up to three gradients one after the other (input: a 'data'
    algorithm, weight: a 'filter' algorithm, bias: a reduction of grad_output); one implementation
    per combination: time = sum, workspace = max (one workspace serves both kernels in turn).
    Combinations dominated by another (no faster and no smaller, one of them strictly) are left
    out, except the default. Returns (implementations, default_name)."""
    bias_t = roofline(L.n * L.k * L.p * L.q, L.y_bytes() + L.b * L.k, 1.0, device) if mask[2] else 0.0
    data = pass_algorithms(L, "data", device) if mask[0] else [(None, 0.0, 0)]
    filt = pass_algorithms(L, "filter", device) if mask[1] else [(None, 0.0, 0)]

    def name(d, f):
        parts = ([f"data:{d}"] if d else []) + ([f"filter:{f}"] if f else [])
        return "+".join(parts) if parts else "bias"

    default = name(DEFAULT["data"] if mask[0] else None, DEFAULT["filter"] if mask[1] else None)
    combos = []
    for dn, dt, dws in data:
        for fn, ft, fws in filt:
            combos.append({"name": name(dn, fn), "cost": rounded(dt + ft + bias_t), "workspace": int(max(dws, fws))})

    def dominated(a):
        return any(b is not a and b["cost"] <= a["cost"] and b["workspace"] <= a["workspace"]
                   and (b["cost"] < a["cost"] or b["workspace"] < a["workspace"]) for b in combos)

    kept = [c for c in combos if c["name"] == default or not dominated(c)]
    # equal (cost, workspace) twins: keep the first in enum order
    seen, out = set(), []
    for c in kept:
        key = (c["cost"], c["workspace"])
        if key in seen and c["name"] != default:
            continue
        seen.add(key)
        out.append(c)
    return out, default
