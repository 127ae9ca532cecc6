#!/usr/bin/python3
"""ctest tools.exporter_semantics: what the exporter writes means what PyTorch ran.

usage: check_exporter.py TOOLS_DIR OUT_DIR       (exit 77 = skipped when torch cannot be imported)
Exports small graphs and checks them against the model itself: one convolution and one
convolution_backward per nn.Conv2d, one in-place update per parameter with a gradient of its
size, momentum buffers versioned twice, phases in order forward < backward < update, no view op
left in the graph, the loss a scalar output, the first convolution's cost by hand, and an
inference graph without backward, update or labels.
"""

import os
import subprocess
import sys

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
        # conv1: 7x7, 3 -> 64 channels, stride 2: [2, 64, 112, 112]
        check(conv["cost"] == 2.0 * 2 * 64 * 112 * 112 * 3 * 7 * 7, f"{opt}: conv1 cost = 2*MACs")
        check("fallback_kernels" not in g["meta"], f"{opt}: no op ran a real fallback kernel")

    g, T = export("transformer-infer-b2.json", "--model", "transformer", "--batch", "2", "--mode", "inference")
    check(all(o["phase"] == "forward" for o in g["ops"]), "inference: forward ops only")
    check("label" not in T, "inference: no label tensor")
    check(all(t["kind"] in ("input", "weight", "activation", "output") for t in T.values()),
          "inference: no gradient or optimizer_state tensor")
    check(not any("transformer_encoder_layer_fwd" in o["op"] for o in g["ops"]), "inference: no fused fast-path op")
    check(sum(o["op"] == "aten.native_layer_norm" for o in g["ops"]) == 4, "inference: 4 layer norms (2 layers)")
    check(sum(o["op"] == "aten.bmm" for o in g["ops"]) == 4, "inference: 4 bmm (scores and context, 2 layers)")

    r = subprocess.run([sys.executable, os.path.join(tools, "export_torch.py"), "--model", "no_such_model",
                        "-o", os.path.join(out, "x.json")], capture_output=True, text=True)
    check(r.returncode == 1 and "unknown model 'no_such_model'" in r.stderr, "unknown model: exit 1 with a message")
    print(f"{len(fails)} failures")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
