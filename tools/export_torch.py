#!/usr/bin/python3
"""Export one PyTorch training step (or inference pass) as a memplan graph (format version 1)."""

import argparse
import math
import operator
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cost_model  # noqa: E402  (roofline and convolution algorithm model)
import memplan_graph  # noqa: E402  (validation shared with the tests)

EXPORTER_VERSION = 2

LIMITATIONS = """\
what is traced:
  train mode: forward, cross-entropy loss (mean over the batch), torch.autograd.grad of the loss
  w.r.t. every parameter, then the optimizer update of every parameter (all in one graph).
  sgd:      p.add_(g, alpha=-lr)
  momentum: buf.mul_(0.9); buf.add_(g); p.add_(buf, alpha=-lr)   (the steady-state step of
            torch.optim.SGD; the first step, which clones g into buf, is not modelled)
  The model is in train() mode: batch norm uses batch statistics and updates its running stats,
  dropout is active. googlenet and inception_v3 keep their auxiliary classifiers (torchvision's
  default) and the loss is the usual weighted sum (googlenet: main + 0.3*(aux1+aux2),
  inception_v3: main + 0.4*aux); pass --no-aux to build them with aux_logits=False.
  inference mode: model.eval() under torch.no_grad(), forward only; the logits are the output.
  Tracing uses make_fx(tracing_mode="fake"): all values are FakeTensors, nothing is computed, so
  any batch size is cheap. The traced order is PyTorch's own (eager forward order, then the
  autograd engine's backward order) and is written as the given order.

what becomes what:
  every aten op that allocates becomes an op (aten.<name> in "op"); its outputs become tensors with
  exact shape, dtype and bytes = prod(shape) * itemsize.
  views and aliases are NOT ops: an output that shares storage with an input (checked through the
  FakeTensor storage identity, e.g. view, _unsafe_view, _reshape_alias, t, transpose, permute,
  expand, squeeze, unsqueeze, slice, select, split/chunk pieces, as_strided, detach, alias,
  getitem of tuples and lists) is mapped onto the tensor owning the storage, so consumers of
  the view read the base tensor and the base lives until the view's last use. A view of part of a
  tensor therefore keeps the whole base tensor alive.
  in-place ops (add_, relu_, mul_, copy_, bernoulli_, the parameter updates, ...) are recognised
  by the schema's write annotation (Tensor(a!)): the op gets a NEW output tensor with
  "inplace_of" the version it overwrites (kind weight for parameters, optimizer_state for
  momentum buffers). Writes through a view version the whole base storage. Readers always read
  the latest version, so the traced order satisfies the format's in-place rule.
  batch norm in training (native_batch_norm; cudnn_batch_norm, miopen_batch_norm and
  _native_batch_norm_legit alike) is split in two ops: the normalization ("aten.native_batch_norm":
  x, weight, bias -> y, save_mean, save_invstd; nothing in place, recomputable) and, right after it,
  "memplan.batch_norm_running_stats" (save_mean, save_invstd, running_mean, running_var ->
  running_mean', running_var' in place). Recomputing the normalization then never updates the
  statistics twice. In training y does not depend on the running statistics, and
  native_batch_norm_backward (train=True) does not read them either: they are dropped from its inputs.
  num_batches_tracked is incremented by its own aten.add_ (the module does it in Python).
  multi-output ops (native_batch_norm, convolution_backward, max_pool2d_with_indices, ...) are one
  op with several outputs; outputs that are None are dropped.
  ops whose results are all non-tensors or all views produce nothing and are not written.
  dropout: by default as PyTorch runs it on the CPU (empty_like, bernoulli_, div_: a float32 mask).
  --dropout fused traces it as a GPU runs it (F.dropout in training, 0 < p < 1, not in place, takes
  native_dropout there: a bool mask) and splits each native_dropout in two ops, "memplan.dropout_mask"
  (x -> mask, random) and "memplan.dropout_apply" (x, mask -> y = x * mask / (1 - p), recomputable);
  native_dropout_backward reads the mask. meta.dropout says so.
  random ops (bernoulli_, native_dropout, rand*, normal_, ...: the schema's nondeterministic_seeded
  tag, a Generator argument, or a known name) get "recomputable": false, and so does an allocation
  (empty, empty_like, new_empty, ...) whose undefined content some op reads (not one that a fill_,
  copy_, zero_ or bernoulli_ overwrites whole first).

tensor kinds:
  input: the data batch and the labels (int64; not in inference graphs); weight: parameters and buffers (batch norm running
  stats and num_batches_tracked); optimizer_state: momentum buffers; output: the loss (train) or
  the logits (inference); activation: values made in the forward phase; gradient: values made in
  the backward and update phases. In-place versions of resident tensors keep the resident kind.

costs (--cost seconds, the default; meta.cost_unit "seconds"):
  cost = max(flops / F, bytes_moved / B) seconds on a reference NVIDIA V100-SXM2-like device
  (F = 15.7e12 FLOP/s fp32, B = 900e9 B/s); bytes_moved = bytes of the tensor inputs read + outputs
  written (shape-only arguments of empty_like/zeros_like... and the target of fill_/copy_/bernoulli_...
  are not read; allocations cost 0). 2-D convolutions and convolution_backward get
  "implementations": a model of cuDNN's algorithms (forward: IMPLICIT_GEMM, IMPLICIT_PRECOMP_GEMM,
  GEMM, FFT, FFT_TILING, WINOGRAD, WINOGRAD_NONFUSED; backward: a data algorithm + a filter
  algorithm per combination), each with a workspace formula of the layer shape and a roofline time
  with a per-algorithm efficiency; the op's own cost/workspace are the default algorithm's
  (IMPLICIT_PRECOMP_GEMM; data ALGO_1 + filter ALGO_1). A model, not measured on a GPU
  (docs/exporter.md).
--cost flops (meta.cost_unit "flops"): exporter v1's FLOP counts, workspace 0, no implementations:
  convolution: 2 * out_elems * (C_in/groups) * prod(kernel); convolution_backward: that per
  requested gradient (input, weight) + grad_out elements for the bias; mm/addmm/bmm/baddbmm: 2*M*N*K
  (+ M*N for the add); pooling: out_elems * prod(kernel); everything else: the largest element
  count among its tensor inputs and outputs (one FLOP per element). The same FLOPs feed the roofline.

other limits:
  models: the classification models of torchvision.models (see --list-models) and "transformer"
  (2-layer nn.TransformerEncoder, d_model 256, 8 heads, feed-forward 2048, dropout 0.1, batch_first,
  post-norm, ReLU passed as a plain function so that eval mode does not take PyTorch's fused fast
  path, input [batch, seq_len, 256] float32 (already embedded), mean over the sequence,
  Linear(256, 1000)).
  torch 1.13 lacks meta kernels for convolution_backward and _adaptive_avg_pool2d_backward; the
  exporter registers shape-only ones. Any other op without a meta kernel runs FakeTensorMode's
  fallback (the real CPU kernel on zero-filled inputs: real compute); the exporter lists such ops
  in meta.fallback_kernels. None of the bundled graphs needs one.
  Detection, segmentation, video and optical-flow models are not supported. Models are built with
  weights=None (no downloads). CPU float32 only; no autocast, no mixed precision.
"""


# ----------------------------------------------------------------------------- models

def classification_models():
    import torchvision.models as tvm
    return sorted(tvm.list_models(module=tvm))


def all_model_names():
    return classification_models() + ["transformer"]


def build_transformer(seq_len, num_classes=1000, d_model=256, nhead=8, layers=2):
    import torch.nn as nn

    import torch.nn.functional as F

    def relu(x):
        # a plain function, not F.relu: eval mode would otherwise take PyTorch's fused CPU fast path
        # (one aten._transformer_encoder_layer_fwd per layer), hiding the layer's structure
        return F.relu(x)

    class TransformerClassifier(nn.Module):
        def __init__(self):
            super().__init__()
            layer = nn.TransformerEncoderLayer(d_model=d_model, nhead=nhead, batch_first=True, activation=relu)
            self.encoder = nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False)
            self.head = nn.Linear(d_model, num_classes)

        def forward(self, x):
            return self.head(self.encoder(x).mean(dim=1))

    return TransformerClassifier(), [seq_len, d_model]


def build_model(name, image_size, seq_len, aux):
    """(model, per-sample input shape, aux loss weights or None)."""
    import torch
    import torchvision.models as tvm
    torch.manual_seed(0)
    if name == "transformer":
        model, shape = build_transformer(seq_len)
        return model, shape, None
    if name not in classification_models():
        known = ", ".join(all_model_names())
        raise SystemExit(f"export_torch.py: unknown model {name!r}; known models: {known}")
    kwargs = {"weights": None}
    aux_weights = None
    if name == "googlenet":
        kwargs["aux_logits"] = aux
        kwargs["init_weights"] = True
        aux_weights = (0.3, 0.3) if aux else None
    elif name == "inception_v3":
        kwargs["aux_logits"] = aux
        kwargs["init_weights"] = True
        aux_weights = (0.4,) if aux else None
    model = tvm.get_model(name, **kwargs)
    return model, [3, image_size, image_size], aux_weights


# ----------------------------------------------------------------------------- tracing

_META_LIB = []  # keeps the torch.library registration alive


def register_missing_meta_kernels():
    """Meta (shape-only) kernels for ops that torch 1.13 lacks, so FakeTensorMode never falls back
    to running the real CPU kernel on zero-filled inputs (slow, and real compute)."""
    import torch
    if _META_LIB:
        return
    lib = torch.library.Library("aten", "IMPL", "Meta")

    def convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
                             transposed, output_padding, groups, output_mask):
        gi = grad_output.new_empty(input.shape) if output_mask[0] else None
        gw = grad_output.new_empty(weight.shape) if output_mask[1] else None
        gb = grad_output.new_empty(bias_sizes) if output_mask[2] and bias_sizes is not None else None
        return gi, gw, gb

    def adaptive_avg_pool2d_backward(grad_output, self):
        return grad_output.new_empty(self.shape)

    for name, fn in (("convolution_backward", convolution_backward),
                     ("_adaptive_avg_pool2d_backward", adaptive_avg_pool2d_backward)):
        try:
            lib.impl(name, fn)
        except RuntimeError:
            pass  # this torch already has a meta kernel for it
    _META_LIB.append(lib)


def _graph_len():
    """Number of fx nodes the active make_fx tracer has recorded so far (phase boundaries)."""
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack
    for mode in reversed(_get_current_dispatch_mode_stack()):
        tracer = getattr(mode, "tracer", None)
        if tracer is not None and hasattr(tracer, "graph"):
            return len(tracer.graph.nodes)
    raise RuntimeError("no make_fx tracer is active")


def trace(model, sample_shape, batch, mode, optimizer, aux_weights, lr=0.01, momentum=0.9, dropout="cpu"):
    """make_fx the step; returns (GraphModule, placeholder names and kinds, phase boundaries).

    dropout "fused": F.dropout runs as on a GPU (at::dropout takes the fused native_dropout there when
    training, 0 < p < 1 and not in place: a bool mask), not as PyTorch's CPU path (empty_like,
    bernoulli_, div_: a float mask)."""
    import torch
    import torch.nn.functional as F
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.nn.utils import stateless

    train = mode == "train"
    model.train(train)
    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    pnames, bnames = list(params), list(buffers)
    if train and not pnames:
        raise SystemExit("export_torch.py: the model has no parameters to train")
    boundaries = {}

    def forward(plist, blist, x):
        state = dict(zip(pnames, plist))
        state.update(zip(bnames, blist))
        return stateless.functional_call(model, state, (x,))

    def loss_of(out, y):
        if isinstance(out, torch.Tensor):
            return F.cross_entropy(out, y)
        # googlenet / inception_v3 named tuples: (logits, aux...) with the usual weights
        main = out[0]
        auxs = [a for a in out[1:] if a is not None]
        loss = F.cross_entropy(main, y)
        for w, a in zip(aux_weights or (), auxs):
            loss = loss + w * F.cross_entropy(a, y)
        return loss

    def train_step(plist, blist, mlist, x, y):
        loss = loss_of(forward(plist, blist, x), y)
        boundaries["backward"] = _graph_len()
        grads = torch.autograd.grad(loss, plist)
        boundaries["update"] = _graph_len()
        with torch.no_grad():
            if optimizer == "sgd":
                for p, g in zip(plist, grads):
                    p.add_(g, alpha=-lr)
            else:
                for p, g, buf in zip(plist, grads, mlist):
                    buf.mul_(momentum)
                    buf.add_(g)
                    p.add_(buf, alpha=-lr)
        return loss

    def infer_step(plist, blist, mlist, x, y):
        with torch.no_grad():
            out = forward(plist, blist, x)
        boundaries["backward"] = boundaries["update"] = _graph_len()
        return out

    plist = [p.detach().clone().requires_grad_(train) for p in params.values()]
    blist = [b.detach().clone() for b in buffers.values()]
    mlist = [torch.zeros_like(p) for p in params.values()] if train and optimizer == "momentum" else []
    x = torch.zeros([batch] + list(sample_shape))
    y = torch.zeros([batch], dtype=torch.long)
    names = ([(n, "weight") for n in pnames] + [(n, "weight") for n in bnames]
             + [(n + ".momentum_buffer", "optimizer_state") for n in pnames[:len(mlist)]]
             + [("input", "input"), ("label", "input")])
    step = train_step if train else infer_step
    register_missing_meta_kernels()
    import torch._subclasses.fake_tensor as fake_tensor
    fallbacks = {}
    real_fallback = fake_tensor.run_fallback_kernel

    def recording_fallback(fake_mode, func, *rest, **kw):
        # an op without a meta kernel: FakeTensorMode runs the real CPU kernel on zero-filled inputs
        fallbacks[str(func)] = fallbacks.get(str(func), 0) + 1
        return real_fallback(fake_mode, func, *rest, **kw)

    fake_tensor.run_fallback_kernel = recording_fallback
    real_dropout = F.dropout

    def fused_dropout(input, p=0.5, training=True, inplace=False):
        if training and 0 < p < 1 and not inplace and input.numel() > 0:  # is_fused_kernel_acceptable
            return torch.native_dropout(input, p, True)[0]
        return real_dropout(input, p, training, inplace)

    if dropout == "fused":
        # nn.Dropout and multi_head_attention_forward look F.dropout up at each call
        F.dropout = fused_dropout
    try:
        gm = make_fx(step, tracing_mode="fake")(plist, blist, mlist, x, y)
    except Exception as e:  # name the model and keep PyTorch's message
        hint = ""
        if "Expected more than 1 value per channel" in str(e):
            hint = " (batch norm on a 1x1 map needs batch > 1 in training; for inception_v3 use --no-aux)"
        raise SystemExit(f"export_torch.py: tracing failed: {type(e).__name__}: {e}{hint}")
    finally:
        fake_tensor.run_fallback_kernel = real_fallback
        F.dropout = real_dropout
    boundaries["fallback_kernels"] = fallbacks
    return gm, names, boundaries


# ----------------------------------------------------------------------------- conversion

def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def _numel(shape):
    return math.prod(shape)


def _flatten(xs):
    for a in xs:
        if isinstance(a, (list, tuple)):
            yield from _flatten(a)
        else:
            yield a


def estimate_flops(name, node, in_vals, out_vals):
    """FLOPs estimate (see --help)."""
    import torch
    args = node.args

    def shape(a):
        v = a.meta.get("val") if hasattr(a, "meta") else None
        return list(v.shape) if isinstance(v, torch.Tensor) else None

    try:
        if name == "convolution":
            w = shape(args[1])
            if args[6]:  # transposed: weight [C_in, C_out/groups, k...]
                return 2.0 * _numel(shape(args[0])) * w[1] * _numel(w[2:])
            return 2.0 * _numel(list(out_vals[0].shape)) * w[1] * _numel(w[2:])
        if name == "convolution_backward":
            go, w = shape(args[0]), shape(args[2])
            transposed, mask = args[7], args[10]
            base = _numel(shape(args[1])) if transposed else _numel(go)
            macs = base * w[1] * _numel(w[2:])
            return 2.0 * macs * (int(mask[0]) + int(mask[1])) + (_numel(go) if mask[2] else 0)
        if name == "mm":
            a, b = shape(args[0]), shape(args[1])
            return 2.0 * a[0] * a[1] * b[1]
        if name == "addmm":
            a, b = shape(args[1]), shape(args[2])
            return 2.0 * a[0] * a[1] * b[1] + a[0] * b[1]
        if name == "bmm":
            a, b = shape(args[0]), shape(args[1])
            return 2.0 * a[0] * a[1] * a[2] * b[2]
        if name == "baddbmm":
            a, b = shape(args[1]), shape(args[2])
            return 2.0 * a[0] * a[1] * a[2] * b[2] + a[0] * a[1] * b[2]
        if name in ("max_pool2d_with_indices", "avg_pool2d", "max_pool3d_with_indices", "avg_pool3d"):
            return float(_numel(list(out_vals[0].shape)) * _numel(list(args[1])))
    except (TypeError, IndexError):
        pass  # unexpected argument layout: fall back to the elementwise rule
    sizes = [v.numel() for v in list(in_vals) + list(out_vals)]
    return float(max(sizes)) if sizes else 0.0


# Ops that only allocate: their output's content is undefined and nothing is read or written.
EMPTY_OPS = {"empty", "empty_like", "new_empty", "empty_strided", "new_empty_strided"}
# Factories whose tensor argument gives only a shape/dtype (its content is not read).
SHAPE_ONLY_INPUT = EMPTY_OPS | {"zeros_like", "ones_like", "full_like", "rand_like", "randn_like", "randint_like",
                                "new_zeros", "new_ones", "new_full"}
# In-place ops that overwrite their first argument without reading it.
OVERWRITE_ONLY = {"fill_", "zero_", "copy_", "bernoulli_", "normal_", "uniform_", "random_", "exponential_",
                  "geometric_", "cauchy_", "log_normal_"}
# Random ops (besides those the schema tags nondeterministic_seeded or that take a Generator).
RANDOM_OPS = {"bernoulli", "bernoulli_", "native_dropout", "_fused_dropout", "dropout", "feature_dropout",
              "alpha_dropout", "feature_alpha_dropout", "rand", "randn", "randint", "randperm", "rand_like",
              "randn_like", "randint_like", "normal", "normal_", "uniform_", "random_", "exponential_",
              "geometric_", "cauchy_", "log_normal_", "multinomial", "poisson", "binomial", "_standard_gamma",
              "_sample_dirichlet", "rrelu", "rrelu_", "rrelu_with_noise", "rrelu_with_noise_"}
# Batch norms that update running_mean/running_var in training: (running_mean, running_var, training)
# argument positions. torch 1.13's native_batch_norm (and cudnn/miopen_batch_norm) do it without a
# (a!) annotation; _native_batch_norm_legit (torch 2) carries the annotation.
BN_TRAIN_OPS = {"native_batch_norm": (3, 4, 5), "cudnn_batch_norm": (3, 4, 5), "miopen_batch_norm": (3, 4, 5),
                "_native_batch_norm_legit": (3, 4, 5)}
BN_UPDATE_OP = "memplan.batch_norm_running_stats"
# native_dropout (x -> y, bool mask) is split in two ops, as the batch norm is: the mask (random, not
# recomputable) and y = x * mask / (1 - p) (recomputable from x and the mask, as native_dropout_backward
# computes it), so that a plan can drop y and keep the 1-byte mask.
DROPOUT_MASK_OP, DROPOUT_APPLY_OP = "memplan.dropout_mask", "memplan.dropout_apply"


def is_random(node):
    """The op draws random numbers: its outputs are not a function of its inputs."""
    schema = node.target._schema
    if schema.name.split("::")[-1] in RANDOM_OPS:
        return True
    tags = getattr(node.target, "tags", ()) or ()
    if any(getattr(t, "name", str(t)).endswith("nondeterministic_seeded") for t in tags):
        return True
    return any("Generator" in str(a.type) for a in schema.arguments)


def bn_running_stats(node):
    """(running_mean node, running_var node) when the op is a batch norm in training that updates
    its running statistics in place, else None."""
    from torch.fx.node import Node
    pos = BN_TRAIN_OPS.get(node.target._schema.name.split("::")[-1])
    if pos is None or len(node.args) <= pos[2] or not node.args[pos[2]]:
        return None
    rm, rv = node.args[pos[0]], node.args[pos[1]]
    if not isinstance(rm, Node) or not isinstance(rv, Node):
        return None  # track_running_stats=False: nothing to update
    return rm, rv


def unread_args(node):
    """Tensor arguments the kernel does not read although they are passed: in training,
    native_batch_norm_backward uses save_mean/save_invstd, never running_mean/running_var (and a
    training batch norm's normalization does not read them either: its update op does)."""
    name = node.target._schema.name.split("::")[-1]
    if name == "native_batch_norm_backward" and len(node.args) > 7 and node.args[7]:
        return [a for a in (node.args[3], node.args[4]) if a is not None]
    stats = bn_running_stats(node)
    return list(stats) if stats else []


def tensor_bytes_read(val):
    """Bytes an op reads from one tensor argument: its elements, at most its storage (a broadcast
    view reads its base once)."""
    return min(val.numel() * val.element_size(), val.storage().nbytes())


def conv_layer(name, node):
    """cost_model.ConvLayer of a 2-D, non-transposed convolution / convolution_backward node, else None."""
    import torch

    def val(a):
        v = a.meta.get("val") if hasattr(a, "meta") else None
        return v if isinstance(v, torch.Tensor) else None

    a = node.args
    if name == "convolution":
        x, w, y = val(a[0]), val(a[1]), node.meta.get("val")
        bias, stride, padding, dilation, transposed, groups = a[2] is not None, a[3], a[4], a[5], a[6], a[8]
    elif name == "convolution_backward":
        y, x, w = val(a[0]), val(a[1]), val(a[2])
        bias, stride, padding, dilation, transposed, groups = a[3] is not None, a[4], a[5], a[6], a[7], a[9]
    else:
        return None
    if transposed or x is None or w is None or not isinstance(y, torch.Tensor) or x.dim() != 4 or w.dim() != 4:
        return None

    def pair(v):
        v = list(v)
        return (v[0], v[0]) if len(v) == 1 else (v[0], v[1])

    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    _, _, p, q = y.shape
    return cost_model.ConvLayer(n, c, h, wd, k, r, s, p, q, pair(stride), pair(padding), pair(dilation), groups,
                                bias=bias, itemsize=x.element_size())


def _storage_key(val):
    return val.storage()._cdata


def _mutated_args(node):
    """Tensor-argument fx nodes the op writes without returning them (schema write annotations)."""
    schema = node.target._schema
    written = []
    for i, arg in enumerate(schema.arguments):
        info = arg.alias_info
        if info is not None and info.is_write:
            val = node.args[i] if i < len(node.args) else node.kwargs.get(arg.name)
            if val is not None:
                written.append(val)
    return written


def op_cost(opname, node, flops, bytes_moved, cost_mode):
    """{"cost", "workspace"[, "implementations"]} of one op.

    cost_mode "flops": cost = FLOPs, workspace 0 (exporter v1). "seconds": cost = the roofline time
    on cost_model.DEVICE; a 2-D convolution (forward or backward) gets every algorithm of the cuDNN
    model as an implementation and the default algorithm's time and workspace as its own."""
    if cost_mode == "flops":
        return {"cost": flops, "workspace": 0}
    if opname in EMPTY_OPS:
        return {"cost": 0.0, "workspace": 0}  # an allocation: no arithmetic, nothing read or written
    layer = conv_layer(opname, node) if node is not None else None
    if layer is not None:
        if opname == "convolution":
            impls, default = cost_model.conv_forward(layer)
        else:
            impls, default = cost_model.conv_backward(layer, [bool(m) for m in node.args[10]])
        d = next(i for i in impls if i["name"] == default)
        return {"cost": d["cost"], "workspace": d["workspace"], "implementations": impls}
    return {"cost": cost_model.rounded(cost_model.roofline(flops, bytes_moved)), "workspace": 0}


def convert(gm, names, boundaries, graph_name, meta, cost_mode="seconds"):
    import torch
    from torch.fx.node import Node

    nodes = list(gm.graph.nodes)
    index = {n: i for i, n in enumerate(nodes)}

    def phase_of(node):
        i = index[node]
        if i < boundaries["backward"]:
            return "forward"
        if i < boundaries["update"]:
            return "backward"
        return "update"

    tensors = []            # output list, in creation order
    tensor_of = {}          # id -> dict
    storage = {}            # storage key -> {"current": latest version id, "root": first tensor id,
    #                                          "resident": resident kind or None}
    node_key = {}           # fx node -> storage key (nodes with a tensor value)
    ops = []

    def new_tensor(tid, val, kind, inplace_of=None):
        shape = list(val.shape)
        t = {"id": tid, "bytes": _numel(shape) * val.element_size(), "shape": shape,
             "dtype": _dtype_name(val.dtype), "kind": kind}
        if inplace_of is not None:
            t["inplace_of"] = inplace_of
        tensors.append(t)
        tensor_of[tid] = t
        return t

    placeholders = [n for n in nodes if n.op == "placeholder"]
    if len(placeholders) != len(names):
        raise RuntimeError(f"expected {len(names)} placeholders, traced {len(placeholders)}")
    for node, (tid, kind) in zip(placeholders, names):
        val = node.meta["val"]
        key = _storage_key(val)
        if key in storage:
            raise RuntimeError(f"inputs {storage[key]['current']!r} and {tid!r} share storage")
        if kind == "input" and not node.users:
            continue  # a data input the step never reads (the labels in inference mode)
        new_tensor(tid, val, kind)
        storage[key] = {"current": tid, "root": tid, "resident": kind}
        node_key[node] = key

    def tensor_val(a):
        v = a.meta.get("val") if isinstance(a, Node) else None
        return v if isinstance(v, torch.Tensor) else None

    dropped = {}
    undefined = set()  # ids of ops that only allocate (content undefined)
    not_read = {}      # op id -> ids it lists as inputs but overwrites whole without reading
    for node in nodes:
        if node.op == "placeholder" or node.op == "output":
            continue
        if node.op == "get_attr":
            # a constant captured by the trace: resident like an input
            val = getattr(gm, node.target)
            if not isinstance(val, torch.Tensor):
                continue
            tid = "const." + node.target
            new_tensor(tid, val, "input")
            key = ("const", node.target)
            storage[key] = {"current": tid, "root": tid, "resident": "input"}
            node_key[node] = key
            continue
        if node.op != "call_function":
            raise RuntimeError(f"unexpected fx node {node.op} {node.target}")
        if node.target is operator.getitem:
            val = tensor_val(node)
            if val is not None:
                key = _storage_key(val)
                if key not in storage:
                    raise RuntimeError(f"{node.name}: getitem of an op output that was never registered")
                node_key[node] = key
            continue
        if not isinstance(node.target, torch._ops.OpOverload):
            raise RuntimeError(f"unexpected call target {node.target!r} at {node.name}")

        opname = node.target._schema.name.split("::")[-1]
        # the op's tensor outputs, in return order (tuple outputs come back through getitem nodes)
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor):
            out_items = [(0, val)]
        else:
            items = {}
            for u in node.users:
                if u.op == "call_function" and u.target is operator.getitem:
                    items[u.args[1]] = tensor_val(u)
            out_items = sorted(items.items())
        out_vals = [v for _, v in out_items]
        unread = unread_args(node)  # passed but not read (running stats of a split batch norm, ...)
        in_nodes = [a for a in _flatten(list(node.args) + list(node.kwargs.values()))
                    if isinstance(a, Node) and a in node_key and a not in unread]
        in_vals = [tensor_val(a) for a in in_nodes]
        in_vals = [v for v in in_vals if v is not None]
        # ids read, at the latest version (traced order = execution order)
        inputs = []
        for a in in_nodes:
            tid = storage[node_key[a]]["current"]
            if tid not in inputs:
                inputs.append(tid)

        returns = node.target._schema.returns
        bn_stats = bn_running_stats(node)
        stats_keys = [node_key[x] for x in bn_stats] if bn_stats else []
        written_keys = []
        written_bytes = {}  # storage key -> bytes the op writes there (the written view's size)
        mutated = _mutated_args(node)
        for a in mutated:
            for b in _flatten([a]):
                if isinstance(b, Node) and b in node_key and node_key[b] not in stats_keys:
                    key = node_key[b]
                    if key not in written_keys:
                        written_keys.append(key)
                    v = tensor_val(b)
                    if v is not None:
                        written_bytes[key] = max(written_bytes.get(key, 0), v.numel() * v.element_size())
        ph = phase_of(node)
        op_id = f"o{len(ops)}"
        pending = []  # (val, storage key, return index) of outputs in new storage
        for k, v in out_items:
            if v is None:
                continue  # None outputs are dropped
            key = _storage_key(v)
            if key in storage:
                # the return's annotation (a list return, e.g. split's Tensor(a)[], has one entry)
                info = returns[min(k, len(returns) - 1)].alias_info if returns else None
                if ((info is not None and info.is_write) or key in written_keys) and key not in stats_keys:
                    if key not in written_keys:
                        written_keys.append(key)
                    written_bytes[key] = max(written_bytes.get(key, 0), v.numel() * v.element_size())
                # else: a view / alias; nothing is allocated
                node_key[_out_node(node, k, val)] = key
                continue
            pending.append((v, key, k))

        outputs = []
        out_tid = {}  # return index -> new tensor id
        multi = len(pending) + len(written_keys) > 1
        j = 0

        def next_id():
            nonlocal j
            tid = f"t{len(ops)}" if not multi else f"t{len(ops)}:{j}"
            j += 1
            return tid

        def new_version(key, tid, ph):
            """A new in-place version of the storage `key` (tensor `tid`); returns the version it overwrites."""
            st = storage[key]
            old = st["current"]
            base = tensor_of[st["root"]]
            kind = st["resident"] or tensor_of[old]["kind"]
            if kind not in ("input", "weight", "optimizer_state", "output"):
                kind = "activation" if ph == "forward" else "gradient"
            t = {"id": tid, "bytes": base["bytes"], "shape": list(base["shape"]), "dtype": base["dtype"],
                 "kind": kind, "inplace_of": old}
            tensors.append(t)
            tensor_of[tid] = t
            st["current"] = tid
            return old

        for v, key, k in pending:
            tid = next_id()
            kind = "activation" if ph == "forward" else "gradient"
            new_tensor(tid, v, kind)
            storage[key] = {"current": tid, "root": tid, "resident": None}
            node_key[_out_node(node, k, val)] = key
            outputs.append(tid)
            out_tid[k] = tid
        overwritten = set()  # versions this op overwrites whole without reading them (fill_, copy_, ...)
        first = mutated[0] if mutated else None
        whole_key = node_key[first] if opname in OVERWRITE_ONLY and isinstance(first, Node) and first in node_key \
            else None
        for key in written_keys:
            tid = next_id()
            old = new_version(key, tid, ph)
            outputs.append(tid)
            if old not in inputs:
                inputs.append(old)  # the op reads-modifies-writes the old version
            if key == whole_key and written_bytes.get(key) == tensor_of[tid]["bytes"] and \
                    sum(1 for a in in_nodes if node_key[a] == key) == 1:
                overwritten.add(old)
        if not outputs:
            dropped[opname] = dropped.get(opname, 0) + 1
            continue
        # bytes moved: tensor arguments read (not those giving only a shape, nor the target of an
        # overwrite-only op) + outputs written
        if opname in SHAPE_ONLY_INPUT:
            read = 0
        else:
            skip = {whole_key} if whole_key is not None else set()
            seen, read = set(), 0
            for a in in_nodes:
                v = tensor_val(a)
                if v is None or node_key[a] in skip or a in seen:
                    continue
                seen.add(a)
                read += tensor_bytes_read(v)
        written = 0 if opname in EMPTY_OPS else \
            sum(v.numel() * v.element_size() for v, _, _ in pending) + sum(written_bytes.values())
        flops = estimate_flops(opname, node, in_vals, [v for v in out_vals if v is not None])
        op = {"id": op_id, "op": "aten." + opname, "inputs": inputs, "outputs": outputs, "phase": ph}
        op.update(op_cost(opname, node, flops, read + written, cost_mode))
        if is_random(node):
            op["recomputable"] = False
        if opname in EMPTY_OPS:
            undefined.add(op_id)
        if overwritten:
            not_read[op_id] = overwritten
        if opname == "native_dropout" and sorted(out_tid) == [0, 1] and len(inputs) == 1:
            # y = out 0, mask = out 1; the mask op reads x for its shape only (bytes: the mask written)
            y, mask = out_tid[0], out_tid[1]
            n = float(math.prod(tensor_of[y]["shape"]))  # elements
            mask_op = {"id": op_id, "op": DROPOUT_MASK_OP, "inputs": list(inputs), "outputs": [mask], "phase": ph}
            mask_op.update(op_cost(DROPOUT_MASK_OP, None, n, tensor_of[mask]["bytes"], cost_mode))
            mask_op["recomputable"] = False
            ops.append(mask_op)
            apply_op = {"id": f"o{len(ops)}", "op": DROPOUT_APPLY_OP, "inputs": [inputs[0], mask], "outputs": [y],
                        "phase": ph}
            apply_op.update(op_cost(DROPOUT_APPLY_OP, None, 2 * n,
                                    tensor_of[inputs[0]]["bytes"] + tensor_of[mask]["bytes"] + tensor_of[y]["bytes"],
                                    cost_mode))
            ops.append(apply_op)
            continue
        ops.append(op)

        if bn_stats:
            # the running-statistics update, split off the normalization (docs/exporter.md):
            # running = (1 - momentum) * running + momentum * batch statistic, from save_mean/save_invstd
            if 1 not in out_tid or 2 not in out_tid:
                raise RuntimeError(f"{node.name}: a training batch norm without save_mean/save_invstd outputs")
            uid = f"o{len(ops)}"
            upd_in = [out_tid[1], out_tid[2]]
            upd_out = []
            for jj, key in enumerate(stats_keys):
                old = new_version(key, f"t{len(ops)}:{jj}", ph)
                upd_in.append(old)
                upd_out.append(f"t{len(ops)}:{jj}")
            stat_bytes = [tensor_of[t]["bytes"] for t in upd_in]
            channels = max(tensor_of[t]["shape"][0] if tensor_of[t]["shape"] else 1 for t in upd_in)
            upd = {"id": uid, "op": BN_UPDATE_OP, "inputs": upd_in, "outputs": upd_out, "phase": ph}
            upd.update(op_cost(BN_UPDATE_OP, None, float(channels), sum(stat_bytes) + sum(stat_bytes[2:]), cost_mode))
            ops.append(upd)

    # an allocation whose (undefined) content some op reads: recomputing it would not give the same
    # values, so it is not recomputable either (an op that overwrites all of it first reads nothing)
    read_ids = {t for o in ops for t in o["inputs"] if t not in not_read.get(o["id"], ())}
    for o in ops:
        if o["id"] in undefined and any(t in read_ids for t in o["outputs"]):
            o["recomputable"] = False

    n_variants = add_output_activated_variants(ops, tensor_of)
    n_cat_variants = add_concatenation_variants(ops, tensor_of)

    out_node = [n for n in nodes if n.op == "output"][0]
    results = [a for a in _flatten(list(out_node.args)) if isinstance(a, Node)]
    for a in results:
        tid = storage[node_key[a]]["current"]
        if tensor_of[tid]["kind"] in ("input", "weight", "optimizer_state"):
            raise RuntimeError(f"the step's result {tid!r} is a resident tensor")
        tensor_of[tid]["kind"] = "output"

    # resident tensors nobody reads are kept: they occupy memory all the same (e.g. unused buffers)
    meta = dict(meta)
    if dropped:
        meta["dropped_ops"] = dropped
    if n_variants or n_cat_variants:
        meta["variants"] = {k: v for k, v in (("output_activated", n_variants), ("from_concatenation", n_cat_variants)) if v}
    if boundaries.get("fallback_kernels"):
        meta["fallback_kernels"] = boundaries["fallback_kernels"]
    return {"format": "memplan-graph", "version": 1, "name": graph_name, "meta": meta,
            "tensors": tensors, "ops": ops}


def add_output_activated_variants(ops, tensor_of):
    """MONeT's output-activated backward (Appendix D) where the trace allows it exactly: a variant
    (docs/format.md, implementations[].inputs) of hardtanh_backward(grad, x) when x is the clone autograd
    saved of the input of an in-place hardtanh_ (ReLU6). grad * (lo < x < hi) equals grad * (lo < y < hi)
    for y = hardtanh_(x) bit for bit (NaN included), so the variant reads y, the clone then has no use,
    and the cost and workspace are the op's own. Returns how many ops got one."""
    producer = {t: o for o in ops for t in o["outputs"]}
    overwriter = {}
    for t in tensor_of.values():
        if t.get("inplace_of"):
            overwriter.setdefault(t["inplace_of"], []).append(t["id"])
    n = 0
    for o in ops:
        if o["op"] != "aten.hardtanh_backward" or len(o["inputs"]) != 2:
            continue
        grad, saved = o["inputs"]
        c = producer.get(saved)
        if c is None or c["op"] != "aten.clone" or len(c["inputs"]) != 1:
            continue
        ys = overwriter.get(c["inputs"][0], [])
        if len(ys) != 1 or producer[ys[0]]["op"] != "aten.hardtanh_" or ys[0] in overwriter:
            continue  # y must still hold the activation's output when the backward runs
        o.setdefault("implementations", []).append(
            {"name": "output_activated", "cost": o.get("cost", 0), "workspace": o.get("workspace", 0), "inputs": [grad, ys[0]]})
        n += 1
    return n


# Elementwise backward ops whose saved tensor may be read through any view of the same values.
ELEMENTWISE_BACKWARD = {"aten.threshold_backward", "aten.hardtanh_backward"}


def add_concatenation_variants(ops, tensor_of):
    """A variant (docs/format.md, implementations[].inputs) of an elementwise activation backward
    (threshold_backward: ReLU; hardtanh_backward: ReLU6) whose saved tensor r is also an input of a
    forward cat: the cat's output c holds r's values in a slice, so the op may read that slice of c
    instead, bit for bit (the mask grad * (r > 0) is computed from the same numbers). Then r is no
    longer needed after the cat (GoogLeNet's and Inception's branch outputs, SqueezeNet's expand
    outputs: each block's activations were saved twice, once in the cat). The cost and workspace are
    the op's own (it reads the slice, as many bytes as r). Neither r nor c may be overwritten in place
    (the versions read must be the ones the cat read and wrote). Not free in every order: c then
    lives until the last of these backward ops, where r's share of it would have been freed earlier,
    so memplan takes it where the plan at the budget is better for it (core/variants.hpp). Returns
    how many ops got one."""
    overwritten = {t["inplace_of"] for t in tensor_of.values() if t.get("inplace_of")}
    cats_reading = {}
    for o in ops:
        if o["op"] == "aten.cat" and o["phase"] == "forward" and len(o["outputs"]) == 1:
            for t in set(o["inputs"]):
                cats_reading.setdefault(t, []).append(o)
    n = 0
    for o in ops:
        if o["op"] not in ELEMENTWISE_BACKWARD or len(o["inputs"]) != 2:
            continue
        grad, saved = o["inputs"]
        cats = cats_reading.get(saved, [])
        if len(cats) != 1 or saved in overwritten or cats[0]["outputs"][0] in overwritten:
            continue
        if any("inputs" in v for v in o.get("implementations", [])):
            continue  # one variant per op (hardtanh_backward may read its output already)
        o.setdefault("implementations", []).append(
            {"name": "from_concatenation", "cost": o.get("cost", 0), "workspace": o.get("workspace", 0),
             "inputs": [grad, cats[0]["outputs"][0]]})
        n += 1
    return n


def _out_node(node, k, val):
    """The fx node that carries output k of `node` (itself for single-tensor results)."""
    import torch
    if isinstance(val, torch.Tensor):
        return node
    for u in node.users:
        if u.target is operator.getitem and u.args[1] == k:
            return u
    return node


# ----------------------------------------------------------------------------- main

def cost_model_meta(cost_mode):
    """meta.cost_model: what the ops' costs mean (docs/exporter.md, "Costs")."""
    if cost_mode == "flops":
        return {"kind": "flops", "workspace": "0 (not modelled)"}
    d = cost_model.DEVICE
    return {"kind": "roofline", "formula": "max(flops / peak_flops, bytes_moved / bandwidth)",
            "bytes_moved": "bytes of the tensor inputs read + outputs written",
            "device": d["name"], "peak_flops": d["peak_flops"], "bandwidth": d["bandwidth"],
            "significant_digits": cost_model.DIGITS,
            "convolution": {"model": "cuDNN algorithms (docs/exporter.md), not measured",
                            "default": dict(cost_model.DEFAULT), "efficiency": cost_model.EFFICIENCY}}


def export(args):
    import torch
    model_name = args.model
    image_size = args.image_size or (299 if model_name == "inception_v3" else 224)
    model, sample_shape, aux_weights = build_model(model_name, image_size, args.seq_len, not args.no_aux)
    optimizer = args.optimizer if args.mode == "train" else "none"
    gm, names, boundaries = trace(model, sample_shape, args.batch, args.mode, args.optimizer, aux_weights,
                                  dropout=args.dropout)
    name = f"{model_name}-{'train' if args.mode == 'train' else 'infer'}-b{args.batch}"
    meta = {"model": model_name, "mode": args.mode, "batch": args.batch, "input_shape": [args.batch] + sample_shape,
            "optimizer": optimizer, "cost_unit": args.cost, "cost_model": cost_model_meta(args.cost),
            "torch": torch.__version__, "exporter": f"tools/export_torch.py v{EXPORTER_VERSION}"}
    if model_name in ("googlenet", "inception_v3"):
        meta["aux_logits"] = not args.no_aux
    if args.dropout == "fused":
        meta["dropout"] = "fused: native_dropout as on a GPU (bool mask), split into memplan.dropout_mask + memplan.dropout_apply"
    graph = convert(gm, names, boundaries, name, meta, args.cost)
    try:
        memplan_graph.validate(graph)
    except memplan_graph.GraphError as e:
        raise SystemExit(f"export_torch.py: internal error, the exported graph is invalid: {e}")
    return graph


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="export_torch.py",
        description="Trace one training step (forward, cross-entropy loss, backward, SGD update) or one\n"
                    "inference pass of a torchvision model into a memplan graph (format version 1; JSON,\n"
                    "gzipped if the output name ends in .gz). Exits 1 with a message on an unknown model,\n"
                    "a model that fails to trace, or a graph that fails the built-in format check.",
        epilog=LIMITATIONS, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", help="torchvision.models classification model name, or 'transformer'")
    p.add_argument("--batch", type=int, default=32, help="batch size (default 32)")
    p.add_argument("--mode", choices=["train", "inference"], default="train")
    p.add_argument("--image-size", type=int, default=None,
                   help="input height = width (default 224, 299 for inception_v3; ignored for transformer)")
    p.add_argument("--seq-len", type=int, default=128, help="sequence length for 'transformer' (default 128)")
    p.add_argument("--optimizer", choices=["sgd", "momentum"], default="sgd",
                   help="parameter update of the training step (default sgd; ignored in inference)")
    p.add_argument("--cost", choices=["seconds", "flops"], default="seconds",
                   help="seconds (default): roofline time on the reference device, with the cuDNN algorithm model "
                        "of convolutions (workspace, implementations); flops: FLOP counts, workspace 0")
    p.add_argument("--dropout", choices=["cpu", "fused"], default="cpu",
                   help="cpu (default): dropout as PyTorch runs it on the CPU (bernoulli_, a float32 mask); fused: as on "
                        "a GPU (native_dropout, a bool mask, 4x smaller), split into a mask op and an apply op")
    p.add_argument("--no-aux", action="store_true",
                   help="build googlenet/inception_v3 with aux_logits=False")
    p.add_argument("-o", "--output", help="output file (.json or .json.gz)")
    p.add_argument("--list-models", action="store_true", help="print the accepted model names and exit")
    args = p.parse_args(argv)
    if args.list_models:
        print("\n".join(all_model_names()))
        return 0
    if not args.model or not args.output:
        p.error("--model and -o are required")
    if args.batch < 1:
        p.error("--batch must be at least 1")
    graph = export(args)
    memplan_graph.dump(graph, args.output)
    st = memplan_graph.given_order_peak(graph)
    print(f"{args.output}: {len(graph['ops'])} ops, {len(graph['tensors'])} tensors, "
          f"total {st['total_bytes']} bytes, given-order peak {st['peak']} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
