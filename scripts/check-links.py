#!/usr/bin/env python3
"""Checks the link rules of docs/architecture.md on a configured build's link graph.

    scripts/check-links.py [--cmake CMAKE] BUILD_DIR

Reads the graph with `cmake --graphviz` of BUILD_DIR (CMake re-runs its configure step there,
which leaves the build files as they were), then checks:

  - Confinement: a network or storage library is linked directly by its owner alone: ZeroMQ by
    ember_transport, Cap'n Proto by ember_wire, RocksDB by ember_embedding. Any other target
    reaches it only through its owner (the tests that write raw Cap'n Proto messages aside).
  - Closures: what a target links, directly or through others, all the way down (a static
    library's private dependencies reach every link it is part of, so every edge counts):
    what "knows no network" has neither ZeroMQ nor Cap'n Proto in its closure, and what holds no
    rows (the client, the trainer, the scheduler, the Python module) has no RocksDB in its own.

A rule on a target this build does not have (the Python module without pybind11, the fuzz targets
outside the fuzz build) is skipped; the libraries every build has must be there. KNOWN lists the
breaches that are known and not fixed yet: each is printed, and it is an error once it no longer
happens, so that its entry goes. Prints every violation with the path that causes it; exits 1 if
there is any. Run by the test suite (ctest -R Layering).
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

# What each outside library is called in the graph: imported targets, or the files they name.
LIBRARIES = {
    "ZeroMQ": re.compile(r"^(cppzmq|libzmq|PkgConfig::ZMQ|.*/libzmq\.(so|a)[.0-9]*)$"),
    "Cap'n Proto": re.compile(r"^(CapnProto::\w+|.*/lib(capnp|kj)[-.0-9a-z]*\.(so|a)[.0-9]*)$"),
    "RocksDB": re.compile(r"^(PkgConfig::ROCKSDB|.*/librocksdb\.(so|a)[.0-9]*)$"),
}
# Confinement: the one target that links each library directly.
OWNER = {"ZeroMQ": "ember_transport", "Cap'n Proto": "ember_wire", "RocksDB": "ember_embedding"}
# Direct links allowed besides the owner's: the tests that build hostile messages by hand.
ALSO_DIRECT = {("common_tests", "Cap'n Proto"), ("integration_tests", "Cap'n Proto")}
NETWORK = ("ZeroMQ", "Cap'n Proto")

# Closures: TARGET must not reach LIBRARY, WHY.
CLOSURE_RULES = [
    *[(target, library, "knows no network")
      for target in ("ember_common", "ember_embedding", "ember_table_config",
                     "ember_checkpoint_files", "ember_fuzz_support")
      for library in NETWORK],
    ("ember_transport", "Cap'n Proto", "the transport carries bytes; the codec reads them"),
    *[(target, "RocksDB", "holds no rows")
      for target in ("ember_common", "ember_transport", "ember_wire", "ember_table_config",
                     "ember_ps_client", "ember_scheduler", "ember_trainer",
                     "ember_server_settings", "ember_job_config", "_ember")],
]
# Targets every build has: a rule on one of them that finds no such target is an error.
REQUIRED = {"ember_common", "ember_transport", "ember_wire", "ember_embedding",
            "ember_table_config", "ember_ps_client", "ember_scheduler", "ember_trainer"}

# Known breaches: (TARGET, LIBRARY) -> (FROM, TO, WHY): the edge FROM -> TO through which TARGET
# reaches LIBRARY. The check ignores that edge for that rule and says so.
KNOWN = {
}

NODE = re.compile(r'^\s*"(node\d+)" \[ label = "([^"]*)", shape = (\w+) \];')
EDGE = re.compile(r'^\s*"(node\d+)" -> "(node\d+)"')
# Shapes of what never lands in a link: executables (an add_dependencies edge to one is a build
# order, not a link) and custom targets.
NOT_LINKED = {"egg", "box"}


def read_graph(cmake, build_dir):
    """The build's link graph: {label: set of labels it links directly}."""
    with tempfile.TemporaryDirectory() as scratch:
        dot = os.path.join(scratch, "ember.dot")
        run = subprocess.run([cmake, f"--graphviz={dot}", build_dir],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if run.returncode != 0 or not os.path.exists(dot):
            sys.exit(f"links: cmake --graphviz of {build_dir} failed:\n{run.stdout}")
        with open(dot) as f:
            lines = f.read().splitlines()
    labels, shapes = {}, {}
    for line in lines:
        node = NODE.match(line)
        if node and not node.group(1).startswith("legend"):
            labels[node.group(1)] = node.group(2)
            shapes[node.group(1)] = node.group(3)
    graph = collections.defaultdict(set)
    for line in lines:
        edge = EDGE.match(line)
        if not edge or edge.group(1) not in labels or edge.group(2) not in labels:
            continue
        source, target = edge.groups()
        if source != target and shapes[target] not in NOT_LINKED:
            graph[labels[source]].add(labels[target])
    for label in labels.values():
        graph.setdefault(label, set())
    return graph


def is_library(label, library):
    return bool(LIBRARIES[library].match(label))


def path_to(graph, start, library, skipped_edge=None):
    """The shortest link path from `start` to `library` (a list of labels), or None."""
    parent = {start: None}
    queue = collections.deque([start])
    while queue:
        label = queue.popleft()
        if is_library(label, library):
            path = []
            while label is not None:
                path.append(label)
                label = parent[label]
            return path[::-1]
        for linked in sorted(graph[label]):
            if (label, linked) != skipped_edge and linked not in parent:
                parent[linked] = label
                queue.append(linked)
    return None


def check_confinement(graph):
    errors = []
    for library, owner in OWNER.items():
        if owner in graph and not any(is_library(linked, library) for linked in graph[owner]):
            errors.append(f"{owner} does not link {library} directly: this script's names for "
                          f"{library} (LIBRARIES) or its owner (OWNER) are out of date")
        for label, linked in sorted(graph.items()):
            direct = sorted(l for l in linked if is_library(l, library))
            if not direct or label == owner or (label, library) in ALSO_DIRECT:
                continue
            if any(is_library(label, other) for other in LIBRARIES):
                continue  # the library's own parts (CapnProto::capnp -> CapnProto::kj)
            errors.append(f"{label} links {library} ({', '.join(direct)}) itself: only {owner} "
                          f"does; link {owner} instead")
    return errors


def check_closure(graph, target, library, why, notes):
    """The errors of rule (target, library); a known breach goes to `notes` instead."""
    known = KNOWN.get((target, library))
    edge = known[:2] if known else None
    path = path_to(graph, target, library, skipped_edge=edge)
    if path is not None:
        return [f"{target} links {library} ({why}): {' -> '.join(path)}"]
    if known is None:
        return []
    path = path_to(graph, target, library)
    if path is None:
        return [f"{target} no longer reaches {library} through {edge[0]} -> {edge[1]}: "
                f"remove its entry from KNOWN in scripts/check-links.py"]
    notes.append(f"known: {target} links {library} through {edge[0]} -> {edge[1]} "
                 f"({' -> '.join(path)}): {known[2]}")
    return []


def check_closures(graph, notes):
    errors = [f"{target} is not a target of this build: rename it in scripts/check-links.py "
              f"if it was renamed" for target in sorted(REQUIRED) if target not in graph]
    for target, library, why in CLOSURE_RULES:
        if target in graph:
            errors += check_closure(graph, target, library, why, notes)
    return errors


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cmake", default="cmake", help="the cmake that configured BUILD_DIR")
    parser.add_argument("build_dir")
    args = parser.parse_args()
    graph = read_graph(args.cmake, os.path.abspath(args.build_dir))
    notes = []
    errors = check_confinement(graph) + check_closures(graph, notes)
    for note in notes:
        print(f"links: {note}")
    for error in errors:
        print(f"links: {error}")
    if errors:
        print("links: violations above (see docs/architecture.md)", file=sys.stderr)
        return 1
    print("links: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
