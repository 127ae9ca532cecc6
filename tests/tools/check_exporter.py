#!/usr/bin/python3
"""ctest tools.exporter_semantics: what the exporter writes means what PyTorch ran.

usage: check_exporter.py TOOLS_DIR OUT_DIR       (exit 77 = skipped when torch cannot be imported)
Exports small graphs and checks them against the model itself: one convolution and one
convolution_backward per nn.Conv2d, one in-place update per parameter with a gradient of its
size, momentum buffers versioned twice, phases in order forward < backward < update, no view op
left in the graph, the loss a scalar output, the first convolution's cost by hand (seconds and
FLOPs), batch norm split into a normalization and a running-statistics update per nn.BatchNorm2d,
the convolution algorithm model (defaults, workspaces by hand, admission rules), dropout's random
ops not recomputable, an inference graph without backward, update or labels, and MobileNet-V2's
output-activated hardtanh_backward variants (exact: checked bit for bit with PyTorch), and
SqueezeNet's from_concatenation variants (a ReLU backward reading its slice of the cat instead of
the branch output it saved), and --dropout fused (bool masks split off native_dropout).
"""

import os
import subprocess
import sys

F, B = 15.7e12, 900e9  # the reference device of the roofline (tools/cost_model.py)


def round6(x):
    return float(f"{x:.6g}")

VIEW_OPS = {"aten.view", "aten._unsafe_view", "aten._reshape_alias", "aten.t", "aten.transpose",
            "aten.permute", "aten.expand", "aten.squeeze", "aten.unsqueeze", "aten.slice",
            "aten.select", "aten.split", "aten.as_strided", "aten.detach", "aten.alias"}


def main(argv):
    tools, out = argv[1], argv[2]
    try:
        import torch
        import torchvision
    except ImportError as e:
        print(f"SKIP: torch/torchvision cannot be imported by {sys.executable}: {e}")
        return 77
    sys.path.insert(0, tools)
    import memplan_graph
    os.makedirs(out, exist_ok=True)
    fails = []

    def check(cond, what):
        print(("ok " if cond else "FAIL ") + what)
        if not cond:
            fails.append(what)

    def export(name, *args):
        path = os.path.join(out, name)
        subprocess.run([sys.executable, os.path.join(tools, "export_torch.py"), *args, "-o", path], check=True)
        g = memplan_graph.load(path)
        memplan_graph.validate(g)
        return g, {t["id"]: t for t in g["tensors"]}

    model = torchvision.models.resnet18(weights=None)
    params = dict(model.named_parameters())
    n_conv = sum(isinstance(m, torch.nn.Conv2d) for m in model.modules())
    bns = [n for n, m in model.named_modules() if isinstance(m, torch.nn.BatchNorm2d)]
    convs = {n + ".weight": m for n, m in model.named_modules() if isinstance(m, torch.nn.Conv2d)}

    for opt in ("sgd", "momentum"):
        g, T = export(f"resnet18-train-b2-{opt}.json", "--model", "resnet18", "--batch", "2", "--optimizer", opt)
        ops = g["ops"]
        names = [o["op"] for o in ops]
        check(names.count("aten.convolution") == n_conv, f"{opt}: {n_conv} convolutions")
        check(names.count("aten.convolution_backward") == n_conv, f"{opt}: {n_conv} convolution_backward")
        check(not VIEW_OPS & set(names), f"{opt}: no view op in the graph ({sorted(VIEW_OPS & set(names))})")
        order = {"forward": 0, "backward": 1, "update": 2}
        ph = [order[o["phase"]] for o in ops]
        check(ph == sorted(ph), f"{opt}: phases in order forward < backward < update")
        producer = {t: o for o in ops for t in o["outputs"]}
        updated = {}
        for o in ops:
            if o["phase"] != "update":
                continue
            for t in o["outputs"]:
                base = T[t].get("inplace_of")
                root = base
                while root in T and T[root].get("inplace_of"):
                    root = T[root]["inplace_of"]
                updated.setdefault(root, []).append(o)
        for pname, p in params.items():
            ups = updated.get(pname, [])
            ok = len(ups) == 1 and T[ups[0]["outputs"][0]]["kind"] == "weight"
            if ok:
                grads = [i for i in ups[0]["inputs"] if i != pname]
                if opt == "sgd":
                    # same bytes, not necessarily the same shape: a view's base is what is stored
                    # (fc.bias's gradient is a view of a [1, 1000] sum)
                    ok = (len(grads) == 1 and T[grads[0]]["bytes"] == p.numel() * p.element_size()
                          and T[grads[0]]["kind"] == "gradient")
                else:
                    ok = len(grads) == 1 and T[grads[0]].get("inplace_of") is not None
            if not ok:
                check(False, f"{opt}: parameter {pname} is updated once in place from a gradient of its size")
                break
        else:
            check(True, f"{opt}: all {len(params)} parameters updated once in place from a gradient of their size")
        if opt == "momentum":
            bufs = [t for t in T if t.endswith(".momentum_buffer")]
            check(len(bufs) == len(params) and all(T[b]["kind"] == "optimizer_state" for b in bufs),
                  "momentum: one optimizer_state buffer per parameter")
            check(all(len(updated.get(b, [])) == 2 for b in bufs), "momentum: each buffer overwritten twice (mul_, add_)")
        outs = [t for t in T.values() if t["kind"] == "output"]
        check(len(outs) == 1 and outs[0]["shape"] == [] and producer[outs[0]["id"]]["phase"] == "forward",
              f"{opt}: the loss is the one scalar output")
        conv = next(o for o in ops if o["op"] == "aten.convolution")
        # conv1: 7x7, 3 -> 64 channels, stride 2, padding 3: [2, 3, 224, 224] -> [2, 64, 112, 112]
        flops = 2.0 * 2 * 64 * 112 * 112 * 3 * 7 * 7
        ws = 4 * 3 * 7 * 7  # IMPLICIT_PRECOMP_GEMM: an int32 offset per (c, r, s)
        io = 4 * (2 * 3 * 224 * 224 + 64 * 3 * 7 * 7 + 2 * 64 * 112 * 112)
        check(conv["cost"] == round6(max(flops / F, (io + 2 * ws) / B)) and conv["workspace"] == ws,
              f"{opt}: conv1 cost = roofline of 2*MACs and its bytes, workspace = IMPLICIT_PRECOMP_GEMM's")
        check(g["meta"]["cost_unit"] == "seconds" and g["meta"]["cost_model"]["kind"] == "roofline",
              f"{opt}: meta.cost_unit seconds, roofline cost model")
        check("fallback_kernels" not in g["meta"], f"{opt}: no op ran a real fallback kernel")

        # batch norm: one normalization and, right after it, one running-statistics update per module
        norm = [i for i, o in enumerate(ops) if o["op"] == "aten.native_batch_norm"]
        upd = [i for i, o in enumerate(ops) if o["op"] == "memplan.batch_norm_running_stats"]
        check(len(norm) == len(bns) and [i + 1 for i in norm] == upd,
              f"{opt}: {len(bns)} batch norms, each followed by its running-stats update")
        running = {f"{b}.running_mean" for b in bns} | {f"{b}.running_var" for b in bns}
        check(all(not T[t].get("inplace_of") and not running & set(ops[i]["inputs"]) and len(ops[i]["outputs"]) == 3
                  and ops[i].get("recomputable", True) for i in norm for t in ops[i]["outputs"]),
              f"{opt}: the normalizations read x, weight, bias and write y, save_mean, save_invstd, nothing in place")
        ok = True
        for i in norm:
            u = ops[i + 1]
            bn = ops[i]["inputs"][1].rsplit(".", 1)[0]  # <module>.weight
            ok &= u["inputs"] == ops[i]["outputs"][1:] + [f"{bn}.running_mean", f"{bn}.running_var"]
            ok &= [T[t].get("inplace_of") for t in u["outputs"]] == [f"{bn}.running_mean", f"{bn}.running_var"]
            ok &= all(T[t]["kind"] == "weight" for t in u["outputs"])
        check(ok, f"{opt}: each update reads save_mean, save_invstd and the running stats and overwrites the latter")
        bwd = [o for o in ops if o["op"] == "aten.native_batch_norm_backward"]
        check(len(bwd) == len(bns) and not any(T[t].get("inplace_of") in running or t in running
                                               for o in bwd for t in o["inputs"]),
              f"{opt}: native_batch_norm_backward (train) does not read the running statistics")
        check(not any(o.get("recomputable") is False for o in ops), f"{opt}: resnet18 has no random op")

        # convolution algorithms
        fwd = [o for o in ops if o["op"] == "aten.convolution"]
        bw = [o for o in ops if o["op"] == "aten.convolution_backward"]
        ok = True
        for o in fwd + bw:
            im = o.get("implementations", [])
            names = [x["name"] for x in im]
            default = "IMPLICIT_PRECOMP_GEMM" if o in fwd else \
                ("data:ALGO_1+filter:ALGO_1" if len(o["outputs"]) > 1 else "filter:ALGO_1")
            d = [x for x in im if x["name"] == default]
            ok &= len(names) == len(set(names)) and len(d) == 1 and (d[0]["cost"], d[0]["workspace"]) == (
                o["cost"], o["workspace"])
            m = convs[o["inputs"][1] if o in fwd else o["inputs"][2]]
            transforms = m.stride == (1, 1) and m.groups == 1
            winograd = any("WINOGRAD" in n.replace("+", ":").split(":") for n in names)  # fused Winograd
            ok &= winograd <= (transforms and m.kernel_size == (3, 3))
            ok &= any("FFT" in n for n in names) <= transforms
            if o in fwd:  # every admitted forward algorithm is listed (dominated ones too)
                ok &= names[:3] == ["IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM"]
                ok &= winograd == (transforms and m.kernel_size == (3, 3))
            else:  # combinations: none dominated by another
                ok &= not any(a is not b and b["cost"] <= a["cost"] and b["workspace"] <= a["workspace"]
                              and (b["cost"], b["workspace"]) != (a["cost"], a["workspace"])
                              for a in o["implementations"] if a["name"] != default for b in o["implementations"])
        check(ok and len(fwd) == len(bw) == n_conv,
              f"{opt}: every convolution (forward, backward) lists the cuDNN model's algorithms, "
              "the default's time and workspace as its own, Winograd only for 3x3 stride 1, FFT only for stride 1, "
              "no dominated backward combination")
        gemm = next(x for x in conv["implementations"] if x["name"] == "GEMM")
        check(gemm["workspace"] == 4 * 2 * 3 * 7 * 7 * 112 * 112, f"{opt}: conv1 GEMM workspace = im2col of the batch")
        first_bw = bw[-1]  # the first convolution's backward runs last; its input needs no gradient
        check(len(first_bw["outputs"]) == 1 and all(x["name"].startswith("filter:") for x in first_bw["implementations"]),
              f"{opt}: the first convolution's backward computes the weight gradient only")

    g, T = export("resnet18-train-b2-flops.json", "--model", "resnet18", "--batch", "2", "--cost", "flops")
    conv = next(o for o in g["ops"] if o["op"] == "aten.convolution")
    check(conv["cost"] == 2.0 * 2 * 64 * 112 * 112 * 3 * 7 * 7, "flops: conv1 cost = 2*MACs")
    check(g["meta"]["cost_unit"] == "flops" and all(o["workspace"] == 0 and "implementations" not in o
                                                    for o in g["ops"]),
          "flops: meta.cost_unit flops, workspace 0, no implementations")
    check(sum(o["op"] == "memplan.batch_norm_running_stats" for o in g["ops"]) == len(bns),
          "flops: batch norm split as well")

    g, T = export("transformer-train-b2.json", "--model", "transformer", "--batch", "2")
    fixed = [o for o in g["ops"] if o.get("recomputable") is False]
    # 2 layers x (attention dropout, dropout after attention, after linear1, after linear2)
    check(len(fixed) == 8 and all(o["op"] == "aten.bernoulli_" for o in fixed),
          "train: the 8 dropout masks (bernoulli_) are not recomputable, nothing else")
    empties = [o for o in g["ops"] if o["op"] == "aten.empty_like"]
    check(len(empties) == 8 and all(o.get("recomputable", True) for o in empties),
          "train: dropout's empty_like (overwritten whole by bernoulli_) stays recomputable")

    # --dropout fused: as on a GPU, native_dropout with a bool mask, split into mask + apply ops
    gf, TF = export("transformer-train-b2-fused.json", "--model", "transformer", "--batch", "2", "--dropout", "fused")
    masks = [o for o in gf["ops"] if o["op"] == "memplan.dropout_mask"]
    applies = [o for o in gf["ops"] if o["op"] == "memplan.dropout_apply"]
    backs = [o for o in gf["ops"] if o["op"] == "aten.native_dropout_backward"]
    check(len(masks) == 8 and [o for o in gf["ops"] if o.get("recomputable") is False] == masks,
          "fused dropout: 8 mask ops, the only ops not recomputable")
    check(len(applies) == 8 and all(a["inputs"] == [m["inputs"][0], m["outputs"][0]] and a["outputs"] != m["outputs"]
                                    and int(a["id"][1:]) == int(m["id"][1:]) + 1 for m, a in zip(masks, applies)),
          "fused dropout: each apply op reads x and its mask, right after the mask op")
    check(all(TF[m["outputs"][0]]["dtype"] == "bool" and 4 * TF[m["outputs"][0]]["bytes"] == TF[a["outputs"][0]]["bytes"]
              for m, a in zip(masks, applies)), "fused dropout: bool masks, a quarter of the float output's bytes")
    n = TF[masks[0]["outputs"][0]]["bytes"]  # elements of the first (attention) dropout
    check(n == 2 * 8 * 128 * 128 and masks[0]["cost"] == round6(n / B) and applies[0]["cost"] == round6(9 * n / B),
          "fused dropout: costs by hand (mask: n bytes written; apply: 4n + n read, 4n written)")
    check(len(backs) == 8 and sorted(b["inputs"][1] for b in backs) == sorted(m["outputs"][0] for m in masks),
          "fused dropout: native_dropout_backward reads the masks")
    check(not any(o["op"] in ("aten.bernoulli_", "aten.native_dropout") for o in gf["ops"]),
          "fused dropout: no bernoulli_ left, native_dropout split")
    check(memplan_graph.given_order_peak(gf)["peak"] < memplan_graph.given_order_peak(g)["peak"],
          "fused dropout: given-order peak below the CPU path's")
    check(gf["meta"].get("dropout", "").startswith("fused") and "dropout" not in g["meta"], "meta.dropout names the fused path")

    g, T = export("transformer-infer-b2.json", "--model", "transformer", "--batch", "2", "--mode", "inference")
    check(all(o["phase"] == "forward" for o in g["ops"]), "inference: forward ops only")
    check("label" not in T, "inference: no label tensor")
    check(all(t["kind"] in ("input", "weight", "activation", "output") for t in T.values()),
          "inference: no gradient or optimizer_state tensor")
    check(not any("transformer_encoder_layer_fwd" in o["op"] for o in g["ops"]), "inference: no fused fast-path op")
    check(sum(o["op"] == "aten.native_layer_norm" for o in g["ops"]) == 4, "inference: 4 layer norms (2 layers)")
    check(sum(o["op"] == "aten.bmm" for o in g["ops"]) == 4, "inference: 4 bmm (scores and context, 2 layers)")

    # MONeT's output-activated backward where it is exact: ReLU6 (hardtanh_) backward from the output
    g, T = export("mobilenet_v2-train-b1.json", "--model", "mobilenet_v2", "--batch", "1")
    prod = {t: o for o in g["ops"] for t in o["outputs"]}
    bws = [o for o in g["ops"] if o["op"] == "aten.hardtanh_backward"]
    good = 0
    for o in bws:
        vs = [x for x in o.get("implementations", []) if "inputs" in x]
        if len(vs) != 1 or vs[0]["name"] != "output_activated" or vs[0]["cost"] != o["cost"]:
            continue
        grad, saved = o["inputs"]
        y = vs[0]["inputs"][1]
        clone = prod[saved]
        good += (vs[0]["inputs"][0] == grad and clone["op"] == "aten.clone" and prod[y]["op"] == "aten.hardtanh_"
                 and T[y]["inplace_of"] == clone["inputs"][0])
    check(len(bws) == 35 and good == 35 and g["meta"].get("variants") == {"output_activated": 35},
          "mobilenet_v2: each of the 35 hardtanh_backward has an output_activated variant reading the hardtanh_ output")
    x = torch.cat([torch.randn(4096) * 4, torch.tensor([0.0, 6.0, -0.0, 6.0000005, 5.9999995, 1e-30, float("nan"),
                                                        float("inf"), -float("inf")])])
    grad = torch.randn_like(x)
    a = torch.ops.aten.hardtanh_backward(grad, x, 0.0, 6.0)
    b = torch.ops.aten.hardtanh_backward(grad, torch.nn.functional.hardtanh(x, 0.0, 6.0), 0.0, 6.0)
    check(torch.equal(a.view(torch.int32), b.view(torch.int32)),
          "hardtanh_backward from the output equals it from the input bit for bit (0, 6, NaN and infinities included)")

    # A ReLU backward may read its saved branch output's slice of the concatenation that read it
    g, T = export("squeezenet1_0-train-b1.json", "--model", "squeezenet1_0", "--batch", "1")
    prod = {t: o for o in g["ops"] for t in o["outputs"]}
    good = 0
    for o in g["ops"]:
        vs = [x for x in o.get("implementations", []) if "inputs" in x]
        if o["op"] != "aten.threshold_backward" or len(vs) != 1:
            continue
        v = vs[0]
        grad, saved = o["inputs"]
        cat = prod.get(v["inputs"][1])
        good += (v["name"] == "from_concatenation" and v["inputs"][0] == grad and v["cost"] == o["cost"]
                 and cat is not None and cat["op"] == "aten.cat" and cat["phase"] == "forward" and saved in cat["inputs"]
                 and T[saved].get("inplace_of") is not None and T[v["inputs"][1]].get("inplace_of") is None)
    # 8 fire modules x 2 expand ReLUs: each saved output is an input of the module's cat
    check(good == 16 and g["meta"].get("variants") == {"from_concatenation": 16},
          "squeezenet1_0: the 16 expand ReLUs' threshold_backward have a from_concatenation variant reading the cat")
    a1, a2 = torch.relu(torch.randn(2, 3, 4, 4)), torch.relu(torch.randn(2, 5, 4, 4))
    c = torch.cat([a1, a2], 1)
    grad = torch.randn_like(a2)
    check(torch.equal(torch.ops.aten.threshold_backward(grad, a2, 0.0),
                      torch.ops.aten.threshold_backward(grad, c[:, 3:], 0.0)),
          "threshold_backward from the concatenation's slice equals it from the branch output")

    r = subprocess.run([sys.executable, os.path.join(tools, "export_torch.py"), "--model", "no_such_model",
                        "-o", os.path.join(out, "x.json")], capture_output=True, text=True)
    check(r.returncode == 1 and "unknown model 'no_such_model'" in r.stderr, "unknown model: exit 1 with a message")
    print(f"{len(fails)} failures")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
