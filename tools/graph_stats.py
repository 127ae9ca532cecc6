#!/usr/bin/python3
"""Validate memplan graph files and print ops, tensors, total bytes and the given-order peak.

The peak follows the memory rule of the graph format (docs/format.md): a storage is a tensor plus
every tensor inplace_of it; storages holding input/weight/optimizer_state tensors that no op
produces are live for the whole run; storages holding an output live from their producer to the
end; any other storage is live from the op producing its first tensor to the last op reading or
writing any of its tensors; an op's workspace counts while it runs. This script is the
independent Python reference for the C++ library's peak of the given order.

usage: graph_stats.py [--markdown] FILE...       (exit status 1 if any file is invalid)
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memplan_graph  # noqa: E402


def mib(b):
    return f"{b / 2**20:.1f}"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("files", nargs="+")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table (with file sizes)")
    args = p.parse_args(argv)
    bad = 0
    rows = []
    for path in args.files:
        try:
            g = memplan_graph.load(path)
            memplan_graph.validate(g)
        except (OSError, ValueError, memplan_graph.GraphError) as e:
            print(f"{path}: INVALID: {e}", file=sys.stderr)
            bad += 1
            continue
        st = memplan_graph.given_order_peak(g)
        rows.append((os.path.basename(path), len(g["ops"]), len(g["tensors"]), st["total_bytes"],
                     st["resident"], st["peak"], os.path.getsize(path)))
    if args.markdown:
        print("| file | ops | tensors | total bytes | resident bytes | given-order peak (bytes) | peak MiB | file size |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for f, n_ops, n_t, total, res, peak, size in rows:
            print(f"| {f} | {n_ops} | {n_t} | {total} | {res} | {peak} | {mib(peak)} | {size} |")
    else:
        for f, n_ops, n_t, total, res, peak, size in rows:
            print(f"{f}: ops {n_ops} tensors {n_t} total_bytes {total} resident {res} peak {peak}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
