"""Reading, validating and measuring memplan graph files (format version 1) in plain Python.

No dependency beyond the standard library, so the unit tests can use it without PyTorch.
This is an independent reference for the C++ library: `validate` checks every rule of the
interchange format (including the optional meta.cost_unit, ops[].recomputable and
ops[].implementations) and `given_order_peak` evaluates the format's memory rule on the given order
(each op with its own workspace, the default implementation, as the C++ given-order peak).
"""

import gzip
import json
import math

FORMAT = "memplan-graph"
VERSION = 1
KINDS = ("input", "weight", "activation", "gradient", "optimizer_state", "output", "control")
RESIDENT_KINDS = ("input", "weight", "optimizer_state")
PHASES = ("forward", "backward", "update", "other")
COST_UNITS = ("seconds", "flops", "units")
DTYPE_BYTES = {
    "float64": 8, "float32": 4, "float16": 2, "bfloat16": 2,
    "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1,
    "complex64": 8, "complex128": 16,
}


class GraphError(Exception):
    """A graph file breaks a rule of the format; the message names the culprit."""


def load(path):
    """Parse a .json or .json.gz graph file (gzip is detected by extension)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            return json.load(f)
    except (EOFError, OSError, UnicodeDecodeError, ValueError) as e:  # truncated gzip, bad JSON, ...
        raise GraphError(f"{path}: cannot read a JSON graph: {type(e).__name__}: {e}") from e


def dump(graph, path):
    """Write compact JSON (no indentation); gzip when the name ends in .gz (mtime 0: reproducible bytes)."""
    text = json.dumps(graph, separators=(",", ":"))
    if str(path).endswith(".gz"):
        with open(path, "wb") as raw:
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as f:
                f.write(text.encode("utf-8"))
    else:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def validate(g):
    """Check every rule of format version 1; raise GraphError naming the first culprit found.

    Returns a small summary dict (counts) when the graph is valid.
    """
    if not isinstance(g, dict):
        raise GraphError("top level is not a JSON object")
    if g.get("format") != FORMAT:
        raise GraphError(f"'format' is {g.get('format')!r}, expected {FORMAT!r}")
    if g.get("version") != VERSION:
        raise GraphError(f"'version' is {g.get('version')!r}, expected {VERSION}")
    tensors, ops = g.get("tensors"), g.get("ops")
    if not isinstance(tensors, list) or not isinstance(ops, list):
        raise GraphError("'tensors' and 'ops' must be lists")
    meta = g.get("meta")
    if meta is not None:
        if not isinstance(meta, dict):
            raise GraphError(f"'meta' is {type(meta).__name__}, not an object")
        unit = meta.get("cost_unit")
        if unit is not None and unit not in COST_UNITS:
            raise GraphError(f"meta.cost_unit {unit!r} is not one of {COST_UNITS}")

    tmap = {}
    for i, t in enumerate(tensors):
        if not isinstance(t, dict) or not isinstance(t.get("id"), str):
            raise GraphError(f"tensors[{i}] has no string 'id'")
        tid = t["id"]
        if tid in tmap:
            raise GraphError(f"duplicate tensor id {tid!r}")
        tmap[tid] = t
        kind = t.get("kind")
        if kind not in KINDS:
            raise GraphError(f"tensor {tid!r}: kind {kind!r} is not one of {KINDS}")
        shape, dtype = t.get("shape"), t.get("dtype")
        if shape is not None:
            if not isinstance(shape, list) or not all(_is_int(d) and d >= 0 for d in shape):
                raise GraphError(f"tensor {tid!r}: shape {shape!r} is not a list of non-negative integers")
        if dtype is not None and dtype not in DTYPE_BYTES:
            raise GraphError(f"tensor {tid!r}: unknown dtype {dtype!r}")
        if "bytes" in t:
            b = t["bytes"]
            if not _is_int(b) or b < 0:
                raise GraphError(f"tensor {tid!r}: bytes {b!r} is not a non-negative integer")
            if shape is not None and dtype is not None:
                want = math.prod(shape) * DTYPE_BYTES[dtype]
                if b != want:
                    raise GraphError(f"tensor {tid!r}: bytes {b} != prod({shape}) * sizeof({dtype}) = {want}")
        elif shape is None or dtype is None:
            raise GraphError(f"tensor {tid!r}: no 'bytes' and not both 'shape' and 'dtype'")
        if kind == "control" and tensor_bytes(t) != 0:
            raise GraphError(f"tensor {tid!r}: control tensors must have 0 bytes")

    # inplace_of: target exists, no cycles, at most one direct in-place successor per tensor
    succ = {}
    for tid, t in tmap.items():
        base = t.get("inplace_of")
        if base is None:
            continue
        if base not in tmap:
            raise GraphError(f"tensor {tid!r}: inplace_of {base!r} is not a tensor")
        if base == tid:
            raise GraphError(f"tensor {tid!r} is inplace_of itself")
        if base in succ:
            raise GraphError(f"tensor {base!r} is overwritten twice in place (by {succ[base]!r} and {tid!r})")
        succ[base] = tid
        if tensor_bytes(tmap[base]) != tensor_bytes(t):
            raise GraphError(f"tensor {tid!r} ({tensor_bytes(t)} bytes) is inplace_of {base!r} "
                             f"({tensor_bytes(tmap[base])} bytes): sizes differ")
    for tid in tmap:
        seen, cur = set(), tid
        while cur is not None:
            if cur in seen:
                raise GraphError(f"inplace_of chain through {tid!r} has a cycle")
            seen.add(cur)
            cur = tmap[cur].get("inplace_of")

    producer = {}
    op_ids = set()
    for pos, op in enumerate(ops):
        if not isinstance(op, dict) or not isinstance(op.get("id"), str):
            raise GraphError(f"ops[{pos}] has no string 'id'")
        oid = op["id"]
        if oid in op_ids:
            raise GraphError(f"duplicate op id {oid!r}")
        op_ids.add(oid)
        if not isinstance(op.get("op", ""), str):
            raise GraphError(f"op {oid!r}: 'op' is not a string")
        if op.get("phase", "other") not in PHASES:
            raise GraphError(f"op {oid!r}: phase {op.get('phase')!r} is not one of {PHASES}")
        cost = op.get("cost", 0)
        if not isinstance(cost, (int, float)) or isinstance(cost, bool) or not cost >= 0 or cost == math.inf:
            raise GraphError(f"op {oid!r}: cost {cost!r} is not a finite non-negative number")
        ws = op.get("workspace", 0)
        if not _is_int(ws) or ws < 0:
            raise GraphError(f"op {oid!r}: workspace {ws!r} is not a non-negative integer")
        rc = op.get("recomputable")
        if rc is not None and not isinstance(rc, bool):
            raise GraphError(f"op {oid!r}: recomputable {rc!r} is not true or false")
        impls = op.get("implementations")
        if impls is not None:
            if not isinstance(impls, list):
                raise GraphError(f"op {oid!r}: implementations {impls!r} is not a list")
            names = set()
            for k, im in enumerate(impls):
                at = f"op {oid!r}: implementations[{k}]"
                if not isinstance(im, dict) or not isinstance(im.get("name"), str) or not im["name"]:
                    raise GraphError(f"{at} has no name (a non-empty string)")
                if im["name"] in names:
                    raise GraphError(f"op {oid!r} lists implementation {im['name']!r} twice")
                names.add(im["name"])
                c = im.get("cost", 0)
                if c is not None and (not isinstance(c, (int, float)) or isinstance(c, bool) or not c >= 0
                                      or c == math.inf):
                    raise GraphError(f"{at}: cost {c!r} is not a finite non-negative number")
                w = im.get("workspace", 0)
                if w is not None and (not _is_int(w) or w < 0):
                    raise GraphError(f"{at}: workspace {w!r} is not a non-negative integer")
                vin = im.get("inputs")
                if vin is not None:
                    # a variant: reads these tensors instead of the op's inputs (docs/format.md)
                    if not isinstance(vin, list) or not vin or not all(isinstance(t, str) for t in vin):
                        raise GraphError(f"{at}: inputs {vin!r} is not a non-empty list of tensor ids")
                    for t in vin:
                        if t not in tmap:
                            raise GraphError(f"{at} reads unknown tensor {t!r}")
        ins, outs = op.get("inputs"), op.get("outputs")
        if not isinstance(ins, list) or not isinstance(outs, list):
            raise GraphError(f"op {oid!r}: 'inputs' and 'outputs' must be lists")
        if len(set(outs)) != len(outs):
            raise GraphError(f"op {oid!r} lists an output twice")
        for tid in ins + outs:
            if tid not in tmap:
                raise GraphError(f"op {oid!r} refers to unknown tensor {tid!r}")
        for tid in outs:
            if tid in producer:
                raise GraphError(f"tensor {tid!r} is produced twice (ops {ops[producer[tid]]['id']!r} and {oid!r})")
            producer[tid] = pos
    for tid, t in tmap.items():
        if tid not in producer and t["kind"] not in RESIDENT_KINDS:
            raise GraphError(f"tensor {tid!r} of kind {t['kind']!r} has no producing op")

    # given order is topological: every input is resident or produced by an earlier op
    for pos, op in enumerate(ops):
        for tid in op["inputs"]:
            p = producer.get(tid)
            if p is None:
                continue  # resident (checked above)
            if p >= pos:
                raise GraphError(f"op {op['id']!r} (position {pos}) reads {tid!r} before its producer "
                                 f"{ops[p]['id']!r} (position {p}) runs")
    # in-place rule: the producer of T (inplace_of S) runs after every other reader of S,
    # and after S exists (S resident or produced earlier)
    readers = {}
    for pos, op in enumerate(ops):
        for tid in op["inputs"]:
            readers.setdefault(tid, []).append(pos)
    for tid, t in tmap.items():
        base = t.get("inplace_of")
        if base is None:
            continue
        if tid not in producer:
            raise GraphError(f"in-place tensor {tid!r} has no producing op")
        p = producer[tid]
        bp = producer.get(base)
        if bp is not None and bp >= p:
            raise GraphError(f"{tid!r} overwrites {base!r} before {base!r} is produced")
        for r in readers.get(base, ()):
            if r != p and r > p:
                raise GraphError(f"op {ops[r]['id']!r} reads {base!r} after op {ops[p]['id']!r} "
                                 f"overwrote it in place (as {tid!r})")
    return {"ops": len(ops), "tensors": len(tensors)}


def tensor_bytes(t):
    if "bytes" in t:
        return t["bytes"]
    return math.prod(t["shape"]) * DTYPE_BYTES[t["dtype"]]


def given_order_peak(g, order=None):
    """Peak bytes of an op order (default: the given order) under the format's memory rule.

    Returns a dict: peak, resident (bytes of always-live storages), argmax (op id where the peak is
    reached, None when the resident set dominates), total_bytes (sum over all tensors), storages.
    The graph is assumed valid (see `validate`).
    """
    tensors, ops = g["tensors"], g["ops"]
    tmap = {t["id"]: t for t in tensors}
    pos_of = {op["id"]: i for i, op in enumerate(ops)}
    seq = list(range(len(ops))) if order is None else [pos_of[o] for o in order]
    n = len(seq)

    def root(tid):
        while tmap[tid].get("inplace_of") is not None:
            tid = tmap[tid]["inplace_of"]
        return tid

    # first and last step at which each storage is touched (produced, read or written)
    first, last, producer = {}, {}, set()
    for s, opi in enumerate(seq):
        op = ops[opi]
        for tid in op["outputs"]:
            producer.add(tid)
            r = root(tid)
            first.setdefault(r, s)
            last[r] = s
        for tid in op["inputs"]:
            last[root(tid)] = s
    storages = {}
    for tid in tmap:
        storages.setdefault(root(tid), []).append(tid)

    delta = [0] * (n + 1)
    resident = 0
    for r, members in storages.items():
        size = max(tensor_bytes(tmap[m]) for m in members)
        if any(m not in producer and tmap[m]["kind"] in RESIDENT_KINDS for m in members):
            resident += size  # live for the whole run
            continue
        if r not in first:
            continue  # nothing produces it (validate rejects such a graph)
        start, end = first[r], last[r]
        if any(tmap[m]["kind"] == "output" for m in members):
            end = n - 1  # outputs stay live from their producer to the end
        delta[start] += size
        delta[end + 1] -= size
    live, peak, argmax = 0, resident, None
    for s in range(n):
        live += delta[s]
        here = resident + live + ops[seq[s]].get("workspace", 0)
        if here > peak:
            peak, argmax = here, ops[seq[s]]["id"]
    return {"peak": peak, "resident": resident, "argmax": argmax,
            "total_bytes": sum(tensor_bytes(t) for t in tensors), "storages": len(storages)}
