#!/usr/bin/python3
"""ctest tools.reexport_*: re-export a graph with tools/export_torch.py and compare with the bundle.

usage: reexport.py TOOLS_DIR BUNDLED_FILE OUT_FILE EXPORTER_ARGS...
Exit 77 (ctest SKIP_RETURN_CODE) when torch/torchvision cannot be imported.
Compares op count, tensor count, total bytes, given-order peak and the sequence of op names (each
reported on its own), then requires the same JSON document (every field: costs, workspaces,
implementations, recomputable, meta) and the same bytes (the exporter is deterministic and gzips
with mtime 0).
"""

import os
import subprocess
import sys


def main(argv):
    tools, bundled, out, extra = argv[1], argv[2], argv[3], argv[4:]
    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError as e:
        print(f"SKIP: torch/torchvision cannot be imported by {sys.executable}: {e}")
        return 77
    sys.path.insert(0, tools)
    import memplan_graph
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    subprocess.run([sys.executable, os.path.join(tools, "export_torch.py"), *extra, "-o", out], check=True)
    new, old = memplan_graph.load(out), memplan_graph.load(bundled)
    memplan_graph.validate(new)
    a, b = memplan_graph.given_order_peak(new), memplan_graph.given_order_peak(old)
    checks = [
        ("ops", len(new["ops"]), len(old["ops"])),
        ("tensors", len(new["tensors"]), len(old["tensors"])),
        ("total bytes", a["total_bytes"], b["total_bytes"]),
        ("given-order peak", a["peak"], b["peak"]),
        ("op sequence", [o["op"] for o in new["ops"]], [o["op"] for o in old["ops"]]),
    ]
    bad = 0
    for what, x, y in checks:
        if x != y:
            shown = (x, y) if not isinstance(x, list) else ("differs", "")
            print(f"FAIL {what}: re-exported {shown[0]} vs bundled {shown[1]}")
            bad += 1
        else:
            print(f"ok {what}: {x if not isinstance(x, list) else len(x)}")
    if new != old:
        diff = [o["id"] for o, p in zip(new["ops"], old["ops"]) if o != p]
        print(f"FAIL documents differ (ops differing: {diff[:5]}{'...' if len(diff) > 5 else ''}; "
              f"meta equal: {new.get('meta') == old.get('meta')}; tensors equal: {new['tensors'] == old['tensors']})")
        bad += 1
    else:
        print("ok same document")
    with open(out, "rb") as f1, open(bundled, "rb") as f2:
        same = f1.read() == f2.read()
    print("ok files are byte-identical" if same else "FAIL files are not byte-identical")
    bad += 0 if same else 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
