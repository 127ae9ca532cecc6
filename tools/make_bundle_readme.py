#!/usr/bin/python3
"""Write <folder>/README.md: the table of the bundled graphs (validated, with given-order peaks).

usage: make_bundle_readme.py FOLDER
"""

import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memplan_graph  # noqa: E402

HEADER = """\
# Bundled model graphs

Real training and inference graphs of torchvision models (and a small Transformer encoder) in the
memplan graph format (docs/format.md), exported by `tools/export_torch.py` ({exporter}) from PyTorch
{torch} (Debian python3-torch, CPU, float32) by tracing with `make_fx` under `FakeTensorMode`. How
they are made and what the exporter maps: docs/exporter.md.

- `<model>-train-b<batch>.json.gz`: one full training step in PyTorch's own order: forward,
  cross-entropy loss, backward (`torch.autograd.grad`), plain SGD update of every parameter
  (`p.add_(g, alpha=-lr)`, in place: updated weights are `inplace_of` the old ones).
- `<model>-infer-b<batch>.json.gz`: `model.eval()` forward under `torch.no_grad()`.
- 12 models in training and 4 in inference at batch 1 and 32; densenet121, resnet101,
  regnet_y_400mf and shufflenet_v2_x1_0 in training at batch 32 only.
- Image size 224 (inception_v3: 299). inception_v3 is built with `aux_logits=False` (at batch 1
  PyTorch itself refuses to batch-normalise the aux branch's 1x1 map in training); googlenet keeps
  its aux classifiers and the loss is main + 0.3 * (aux1 + aux2).
- `transformer`: 2-layer `nn.TransformerEncoder` (d_model 256, 8 heads, feed-forward 2048,
  dropout 0.1), input [batch, 128, 256], mean over the sequence, `Linear(256, 1000)`. Its op counts
  differ between batch 1 and 32 because PyTorch's dispatch does: at batch 1 more tensors are
  already contiguous, so some `linear`s run as one `addmm` and some `clone`s are not needed; at
  batch 32 they run as `mm` + `add` and copy.
- `cost` is seconds (`meta.cost_unit`): a roofline time, max(FLOPs / 15.7e12, bytes moved / 900e9),
  on a V100-SXM2-like reference device (`meta.cost_model`). Every 2-D convolution and
  convolution_backward lists `implementations`: a model of cuDNN's algorithms, each with a
  workspace and a time; the op's own `cost`/`workspace` are the default algorithm's
  (IMPLICIT_PRECOMP_GEMM forward, ALGO_1 for the data and filter gradients). A model, not measured.
- In training, batch norm is two ops: the normalization (`aten.native_batch_norm`, recomputable)
  and `memplan.batch_norm_running_stats`, which updates the running statistics (`weight` tensors)
  in place. Random ops (dropout's `bernoulli_`) are `"recomputable": false`.

Columns: ops and tensors in the file; total bytes = sum of all tensor sizes; resident = bytes of
the storages live for the whole run (inputs, weights, buffers); peak = the peak of the given order
under the format's memory rule, each op with its own workspace (tools/graph_stats.py, an independent
Python reference); step = the sum of the ops' own costs (one step on the reference device, model);
impl = ops with `implementations`; fixed = ops that are not recomputable.

Regenerate everything (about {minutes} minutes on 2 cores): `tools/export_all.sh` (from the
repository root; writes data/models and this README). One file:
`/usr/bin/python3 tools/export_torch.py --model resnet18 --batch 32 --mode train -o resnet18-train-b32.json.gz`.
Check the bundle: `/usr/bin/python3 tools/graph_stats.py data/models/*.json.gz`.

"""


def main(argv):
    folder = argv[1]
    files = sorted(glob.glob(os.path.join(folder, "*.json.gz")))
    if not files:
        raise SystemExit(f"make_bundle_readme.py: no .json.gz files in {folder}")
    rows, torch_version, exporter, total_size = [], "?", "?", 0
    for path in files:
        g = memplan_graph.load(path)
        memplan_graph.validate(g)
        st = memplan_graph.given_order_peak(g)
        meta = g.get("meta", {})
        torch_version = meta.get("torch", torch_version)
        exporter = meta.get("exporter", exporter).split()[-1]
        unit = meta.get("cost_unit")
        step = f"{sum(o.get('cost', 0) for o in g['ops']) * 1e3:.2f}" if unit == "seconds" else "-"
        n_impl = sum(1 for o in g["ops"] if o.get("implementations"))
        n_fixed = sum(1 for o in g["ops"] if o.get("recomputable") is False)
        size = os.path.getsize(path)
        total_size += size
        rows.append(f"| {os.path.basename(path)} | {len(g['ops'])} | {len(g['tensors'])} | {st['total_bytes']} "
                    f"| {st['resident']} | {st['peak']} | {st['peak'] / 2**20:.1f} | {step} | {n_impl} | {n_fixed} | {size} |")
    text = HEADER.format(torch=torch_version, exporter=exporter, minutes=6)
    text += ("| file | ops | tensors | total bytes | resident bytes | given-order peak (bytes) | peak (MiB) "
             "| step (ms) | impl | fixed | file size (bytes) |\n")
    text += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    text += "\n".join(rows) + "\n"
    text += f"\n{len(files)} files, {total_size} bytes ({total_size / 2**20:.2f} MiB) in all.\n"
    with open(os.path.join(folder, "README.md"), "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {os.path.join(folder, 'README.md')}: {len(files)} files, {total_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
