#!/usr/bin/python3
"""ctest tools.validator_rejects_broken: the format validator catches deliberately broken graphs.

usage: check_validator.py TOOLS_DIR GOOD_GRAPH OUT_DIR
Writes one broken copy per rule into OUT_DIR, then checks that memplan_graph.validate raises with a
message naming the culprit and that tools/graph_stats.py exits non-zero on the file. The unmodified
graph must pass both.
"""

import copy
import gzip
import os
import subprocess
import sys


def main(argv):
    tools, good_path, out = argv[1], argv[2], argv[3]
    sys.path.insert(0, tools)
    import memplan_graph
    os.makedirs(out, exist_ok=True)
    good = memplan_graph.load(good_path)
    memplan_graph.validate(good)
    ops, tensors = good["ops"], good["tensors"]
    tpos = {t["id"]: i for i, t in enumerate(tensors)}
    producer = {t: i for i, op in enumerate(ops) for t in op["outputs"]}
    # an op reading a produced tensor, and an in-place update of a weight that an earlier op reads
    reader = next(i for i, op in enumerate(ops) if any(x in producer for x in op["inputs"]))
    upd = next(t for t in tensors if t.get("inplace_of") and t["kind"] == "weight"
               and any(t["inplace_of"] in op["inputs"] for op in ops[:producer[t["id"]]]))
    sized = next(t for t in tensors if "shape" in t and t["bytes"] > 0)

    cases = []

    def case(name, expect, mutate):
        g = copy.deepcopy(good)
        mutate(g)
        cases.append((name, expect, g))

    case("dup_tensor_id", "duplicate tensor id", lambda g: g["tensors"].append(dict(g["tensors"][0])))
    case("dup_op_id", "duplicate op id", lambda g: g["ops"][1].update(id=g["ops"][0]["id"]))
    case("bytes_vs_shape", "bytes", lambda g: g["tensors"][tpos[sized["id"]]].update(bytes=sized["bytes"] + 4))
    case("bad_kind", "kind", lambda g: g["tensors"][0].update(kind="parameter"))
    case("unknown_input", "unknown tensor", lambda g: g["ops"][reader]["inputs"].append("no-such-tensor"))

    def no_producer(g):
        g["tensors"].append({"id": "orphan", "bytes": 4, "kind": "activation"})
        g["ops"][reader]["inputs"].append("orphan")
    case("no_producer", "no producing op", no_producer)

    def swap(g):
        i = reader
        j = producer[next(x for x in g["ops"][i]["inputs"] if x in producer)]
        g["ops"][i], g["ops"][j] = g["ops"][j], g["ops"][i]
    case("not_topological", "before its producer", swap)

    def produced_twice(g):
        g["ops"][reader]["outputs"].append(g["ops"][0]["outputs"][0])
    case("produced_twice", "produced twice", produced_twice)

    def late_reader(g):
        # the last op reads the weight after its in-place update overwrote it
        g["ops"][-1]["inputs"].append(upd["inplace_of"])
    case("inplace_rule", "overwrote it in place", late_reader)

    case("inplace_unknown", "inplace_of", lambda g: g["tensors"][tpos[upd["id"]]].update(inplace_of="nowhere"))
    case("bad_format", "format", lambda g: g.update(format="other"))
    case("negative_cost", "cost", lambda g: g["ops"][0].update(cost=-1))
    # the optional fields of exporter v2 (docs/format.md): meta.cost_unit, recomputable, implementations
    conv = next(i for i, op in enumerate(ops) if op.get("implementations"))
    case("bad_cost_unit", "cost_unit", lambda g: g["meta"].update(cost_unit="joules"))
    case("recomputable_not_bool", "recomputable", lambda g: g["ops"][0].update(recomputable="no"))
    case("impl_twice", "twice", lambda g: g["ops"][conv]["implementations"].append(
        dict(g["ops"][conv]["implementations"][0])))
    case("impl_negative_workspace", "workspace", lambda g: g["ops"][conv]["implementations"][0].update(workspace=-1))
    case("impl_no_name", "no name", lambda g: g["ops"][conv]["implementations"][0].pop("name"))
    case("impl_not_list", "not a list", lambda g: g["ops"][conv].update(implementations={"name": "x"}))

    failures = 0
    for name, expect, g in cases:
        path = os.path.join(out, f"broken-{name}.json.gz")
        memplan_graph.dump(g, path)
        try:
            memplan_graph.validate(memplan_graph.load(path))
            print(f"FAIL {name}: accepted")
            failures += 1
        except memplan_graph.GraphError as e:
            if expect not in str(e):
                print(f"FAIL {name}: rejected for the wrong reason: {e}")
                failures += 1
            else:
                print(f"ok {name}: {e}")
        rc = subprocess.run([sys.executable, os.path.join(tools, "graph_stats.py"), path],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        if rc == 0:
            print(f"FAIL {name}: graph_stats.py exited 0")
            failures += 1

    # a truncated gzip file is an error too, not a crash
    trunc = os.path.join(out, "broken-truncated.json.gz")
    with open(good_path, "rb") as f:
        data = f.read()
    with open(trunc, "wb") as f:
        f.write(data[: len(data) // 2])
    rc = subprocess.run([sys.executable, os.path.join(tools, "graph_stats.py"), trunc],
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if rc.returncode != 1 or "INVALID" not in rc.stderr:
        print(f"FAIL truncated: graph_stats.py exit {rc.returncode}: {rc.stderr.strip()[-200:]}")
        failures += 1
    else:
        print("ok truncated:", rc.stderr.strip().splitlines()[-1])

    # and the unmodified graph passes the command-line check
    rc = subprocess.run([sys.executable, os.path.join(tools, "graph_stats.py"), good_path]).returncode
    if rc != 0:
        print("FAIL the unmodified graph is rejected by graph_stats.py")
        failures += 1
    print(f"{len(cases) + 1} broken copies, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
