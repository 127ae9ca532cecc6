#!/usr/bin/python3
"""Export one PyTorch training step (or inference pass) as a memplan graph (format version 1)."""

import argparse
import math
import operator
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memplan_graph  # noqa: E402  (validation shared with the tests)

EXPORTER_VERSION = 1

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
  aten.native_batch_norm in torch 1.13 mutates running_mean/running_var without a schema
  annotation; in training it gets extra outputs "inplace_of" those buffers (special-cased).
  multi-output ops (native_batch_norm, convolution_backward, max_pool2d_with_indices, ...) are one
  op with several outputs; outputs that are None are dropped.
  ops whose results are all non-tensors or all views produce nothing and are not written.
  random ops (native_dropout, bernoulli_, rand, ...) are ordinary ops; the values are not fixed.

tensor kinds:
  input: the data batch and the labels (int64; not in inference graphs); weight: parameters and buffers (batch norm running
  stats and num_batches_tracked); optimizer_state: momentum buffers; output: the loss (train) or
  the logits (inference); activation: values made in the forward phase; gradient: values made in
  the backward and update phases. In-place versions of resident tensors keep the resident kind.

costs (the "cost" field, FLOPs, one multiply-add = 2):
  convolution: 2 * out_elems * (C_in/groups) * prod(kernel); convolution_backward: that per
  requested gradient (input, weight) + grad_out elements for the bias; mm/addmm/bmm/baddbmm: 2*M*N*K
  (+ M*N for the add); pooling: out_elems * prod(kernel); everything else: the largest element
  count among its tensor inputs and outputs (one FLOP per element). workspace is always 0.

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


def trace(model, sample_shape, batch, mode, optimizer, aux_weights, lr=0.01, momentum=0.9):
    """make_fx the step; returns (GraphModule, placeholder names and kinds, phase boundaries)."""
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
    try:
        gm = make_fx(step, tracing_mode="fake")(plist, blist, mlist, x, y)
    except Exception as e:  # name the model and keep PyTorch's message
        hint = ""
        if "Expected more than 1 value per channel" in str(e):
            hint = " (batch norm on a 1x1 map needs batch > 1 in training; for inception_v3 use --no-aux)"
        raise SystemExit(f"export_torch.py: tracing failed: {type(e).__name__}: {e}{hint}")
    finally:
        fake_tensor.run_fallback_kernel = real_fallback
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


def estimate_cost(name, node, in_vals, out_vals):
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


def _storage_key(val):
    return val.storage()._cdata


def _mutated_args(node):
    """Tensor-argument fx nodes the op writes without returning them (schema writes + known gaps)."""
    target = node.target
    schema = target._schema
    written = []
    for i, arg in enumerate(schema.arguments):
        info = arg.alias_info
        if info is not None and info.is_write:
            val = node.args[i] if i < len(node.args) else node.kwargs.get(arg.name)
            if val is not None:
                written.append(val)
    # torch 1.13: native_batch_norm updates running_mean/running_var (args 3, 4) when training,
    # but its schema carries no (a!) annotation.
    if schema.name == "aten::native_batch_norm" and len(node.args) > 5 and node.args[5]:
        for i in (3, 4):
            if node.args[i] is not None:
                written.append(node.args[i])
    return written


def convert(gm, names, boundaries, graph_name, meta):
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
        in_nodes = [a for a in _flatten(list(node.args) + list(node.kwargs.values()))
                    if isinstance(a, Node) and a in node_key]
        in_vals = [tensor_val(a) for a in in_nodes]
        in_vals = [v for v in in_vals if v is not None]
        # ids read, at the latest version (traced order = execution order)
        inputs = []
        for a in in_nodes:
            tid = storage[node_key[a]]["current"]
            if tid not in inputs:
                inputs.append(tid)

        returns = node.target._schema.returns
        written_keys = []
        for a in _mutated_args(node):
            for b in _flatten([a]):
                if isinstance(b, Node) and b in node_key and node_key[b] not in written_keys:
                    written_keys.append(node_key[b])
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
                if (info is not None and info.is_write) or key in written_keys:
                    if key not in written_keys:
                        written_keys.append(key)
                # else: a view / alias; nothing is allocated
                node_key[_out_node(node, k, val)] = key
                continue
            pending.append((v, key, k))

        outputs = []
        multi = len(pending) + len(written_keys) > 1
        j = 0

        def next_id():
            nonlocal j
            tid = f"t{len(ops)}" if not multi else f"t{len(ops)}:{j}"
            j += 1
            return tid

        for v, key, k in pending:
            tid = next_id()
            kind = "activation" if ph == "forward" else "gradient"
            new_tensor(tid, v, kind)
            storage[key] = {"current": tid, "root": tid, "resident": None}
            node_key[_out_node(node, k, val)] = key
            outputs.append(tid)
        for key in written_keys:
            st = storage[key]
            old = st["current"]
            tid = next_id()
            base = tensor_of[st["root"]]
            kind = st["resident"] or tensor_of[old]["kind"]
            if kind not in ("input", "weight", "optimizer_state", "output"):
                kind = "activation" if ph == "forward" else "gradient"
            t = {"id": tid, "bytes": base["bytes"], "shape": list(base["shape"]), "dtype": base["dtype"],
                 "kind": kind, "inplace_of": old}
            tensors.append(t)
            tensor_of[tid] = t
            st["current"] = tid
            outputs.append(tid)
            if old not in inputs:
                inputs.append(old)  # the op reads-modifies-writes the old version
        if not outputs:
            dropped[opname] = dropped.get(opname, 0) + 1
            continue
        ops.append({"id": op_id, "op": "aten." + opname, "inputs": inputs, "outputs": outputs,
                    "phase": ph, "cost": estimate_cost(opname, node, in_vals, [v for v in out_vals if v is not None]),
                    "workspace": 0})

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
    if boundaries.get("fallback_kernels"):
        meta["fallback_kernels"] = boundaries["fallback_kernels"]
    return {"format": "memplan-graph", "version": 1, "name": graph_name, "meta": meta,
            "tensors": tensors, "ops": ops}


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

def export(args):
    import torch
    model_name = args.model
    image_size = args.image_size or (299 if model_name == "inception_v3" else 224)
    model, sample_shape, aux_weights = build_model(model_name, image_size, args.seq_len, not args.no_aux)
    optimizer = args.optimizer if args.mode == "train" else "none"
    gm, names, boundaries = trace(model, sample_shape, args.batch, args.mode, args.optimizer, aux_weights)
    name = f"{model_name}-{'train' if args.mode == 'train' else 'infer'}-b{args.batch}"
    meta = {"model": model_name, "mode": args.mode, "batch": args.batch, "input_shape": [args.batch] + sample_shape,
            "optimizer": optimizer, "cost_unit": "flops", "torch": torch.__version__,
            "exporter": f"tools/export_torch.py v{EXPORTER_VERSION}"}
    if model_name in ("googlenet", "inception_v3"):
        meta["aux_logits"] = not args.no_aux
    graph = convert(gm, names, boundaries, name, meta)
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
