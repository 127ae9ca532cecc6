#!/usr/bin/python3
"""ctest tools.bundle_valid: every bundled graph in data/models is valid, complete and documented.

usage: check_bundle.py TOOLS_DIR MODELS_DIR
Checks: the required files exist; each parses, passes tools/memplan_graph.validate (ids unique,
producers, bytes = shape x dtype, topological given order, in-place rule, the optional
cost_unit/recomputable/implementations fields); costs are roofline seconds; in training, batch
norm is split (normalization without in-place outputs, running-stats update right after it) and
dropout's random ops are not recomputable; convolutions list their algorithms with the default's
cost and workspace as their own; the reference peak equals a brute-force evaluation of the memory
rule; the README row of each file states the same ops, tensors, total bytes and peak; the bundle
stays under 1.5 MiB.
"""

import glob
import os
import re
import sys

TRAIN = ["alexnet", "vgg11", "vgg16", "resnet18", "resnet50", "googlenet", "inception_v3",
         "mobilenet_v2", "mnasnet0_5", "squeezenet1_0", "efficientnet_b0", "transformer"]
INFER = ["resnet18", "resnet50", "mobilenet_v2", "transformer"]
EXTRA = ["densenet121", "resnet101", "regnet_y_400mf", "shufflenet_v2_x1_0"]  # training, batch 32 only
WITH_DROPOUT = ["alexnet", "vgg11", "vgg16", "googlenet", "inception_v3", "mobilenet_v2", "mnasnet0_5", "squeezenet1_0",
                "efficientnet_b0", "transformer"]
MAX_BUNDLE_BYTES = 3 * 2**19  # 1.5 MiB
RESIDENT = ("input", "weight", "optimizer_state")


def brute_force_peak(g):
    """Memory rule evaluated naively: at each step, sum every storage whose live interval holds it."""
    tmap = {t["id"]: t for t in g["tensors"]}
    ops = g["ops"]

    def root(t):
        while tmap[t].get("inplace_of"):
            t = tmap[t]["inplace_of"]
        return t

    members = {}
    for t in tmap:
        members.setdefault(root(t), []).append(t)
    produced = {t for op in ops for t in op["outputs"]}
    intervals, resident = [], 0
    for r, ms in members.items():
        size = max(tmap[m]["bytes"] for m in ms)
        if any(m not in produced and tmap[m]["kind"] in RESIDENT for m in ms):
            resident += size
            continue
        steps = [i for i, op in enumerate(ops) if any(m in op["outputs"] or m in op["inputs"] for m in ms)]
        first = min(i for i, op in enumerate(ops) if any(m in op["outputs"] for m in ms))
        last = len(ops) - 1 if any(tmap[m]["kind"] == "output" for m in ms) else max(steps)
        intervals.append((first, last, size))
    peak = resident
    for i, op in enumerate(ops):
        live = resident + sum(s for a, b, s in intervals if a <= i <= b) + op.get("workspace", 0)
        peak = max(peak, live)
    return peak


def semantics(g, name):
    """What exporter v2 promises about every bundled file; returns the broken promises."""
    bad = []
    ops, T = g["ops"], {t["id"]: t for t in g["tensors"]}
    meta = g.get("meta", {})
    if meta.get("cost_unit") != "seconds" or meta.get("cost_model", {}).get("kind") != "roofline":
        bad.append(f"cost_unit {meta.get('cost_unit')!r}, not roofline seconds")
    train = "-train-" in name
    for i, o in enumerate(ops):
        if o["op"] == "aten.native_batch_norm" and train:
            if any(T[t].get("inplace_of") for t in o["outputs"]) or any(T[t]["kind"] == "weight" and "running" in t
                                                                          for t in o["inputs"]):
                bad.append(f"{o['id']}: a training batch norm still reads or updates its running statistics")
            if i + 1 >= len(ops) or ops[i + 1]["op"] != "memplan.batch_norm_running_stats" or \
                    ops[i + 1]["inputs"][:2] != o["outputs"][1:3]:
                bad.append(f"{o['id']}: not followed by its memplan.batch_norm_running_stats")
        if o["op"] == "memplan.batch_norm_running_stats" and not all(T[t].get("inplace_of") for t in o["outputs"]):
            bad.append(f"{o['id']}: the running-stats update does not write in place")
        if o["op"] in ("aten.convolution", "aten.convolution_backward"):
            im = {x["name"]: (x["cost"], x["workspace"]) for x in o.get("implementations", [])}
            if (o["cost"], o["workspace"]) not in im.values():
                bad.append(f"{o['id']}: {o['op']} without its default among its implementations")
        if o.get("recomputable") is False and o["op"] != "aten.bernoulli_":
            bad.append(f"{o['id']}: {o['op']} marked not recomputable")
    model = name.split("-")[0]
    fixed = sum(o.get("recomputable") is False for o in ops)
    if train and (fixed > 0) != (model in WITH_DROPOUT):
        bad.append(f"{fixed} ops not recomputable (dropout: {model in WITH_DROPOUT})")
    return bad


def main(argv):
    tools, models = argv[1], argv[2]
    sys.path.insert(0, tools)
    import memplan_graph
    failures = []
    want = [f"{m}-train-b{b}.json.gz" for m in TRAIN for b in (1, 32)]
    want += [f"{m}-infer-b{b}.json.gz" for m in INFER for b in (1, 32)]
    want += [f"{m}-train-b32.json.gz" for m in EXTRA]
    for w in want:
        if not os.path.exists(os.path.join(models, w)):
            failures.append(f"missing bundled graph {w}")
    readme = open(os.path.join(models, "README.md"), encoding="utf-8").read()
    files = sorted(glob.glob(os.path.join(models, "*.json.gz")) + glob.glob(os.path.join(models, "*.json")))
    for path in files:
        name = os.path.basename(path)
        try:
            g = memplan_graph.load(path)
            memplan_graph.validate(g)
        except Exception as e:  # report every bad file, not just the first
            failures.append(f"{name}: {type(e).__name__}: {e}")
            continue
        if g.get("meta", {}).get("fallback_kernels"):
            failures.append(f"{name}: traced with real fallback kernels {g['meta']['fallback_kernels']}")
        failures += [f"{name}: {w}" for w in semantics(g, name)]
        st = memplan_graph.given_order_peak(g)
        # the brute force is quadratic; the batch-1 graphs are enough to cross-check the reference
        if "-b1." in name:
            bf = brute_force_peak(g)
            if bf != st["peak"]:
                failures.append(f"{name}: reference peak {st['peak']} != brute-force peak {bf}")
        if not st["resident"] <= st["peak"] <= st["total_bytes"] + max([o.get("workspace", 0) for o in g["ops"]] + [0]):
            failures.append(f"{name}: peak {st['peak']} outside [resident, total bytes]")
        m = re.search(r"^\| " + re.escape(name) + r" \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|", readme, re.M)
        if not m:
            failures.append(f"{name}: no row in data/models/README.md")
        else:
            stated = tuple(int(x) for x in m.groups())
            actual = (len(g["ops"]), len(g["tensors"]), st["total_bytes"], st["resident"], st["peak"])
            if stated != actual:
                failures.append(f"{name}: README states {stated}, file has {actual} (ops, tensors, total, resident, peak)")
        print(f"ok {name}: {len(g['ops'])} ops, {len(g['tensors'])} tensors, peak {st['peak']}")
    total = sum(os.path.getsize(p) for p in files)
    if total > MAX_BUNDLE_BYTES:
        failures.append(f"the bundle is {total} bytes, more than {MAX_BUNDLE_BYTES}")
    print(f"bundle: {len(files)} files, {total} bytes")
    for f in failures:
        print("FAIL", f)
    print(f"{len(files)} files checked, {len(failures)} failures")
    return 1 if failures or not files else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
