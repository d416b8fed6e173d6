"""The source's structure: no include cycle among the user/ modules, every header compiles alone
(no root, no BPF).

A module is foo.c with foo.h. Module A uses module B when foo.c or foo.h of A
includes B's header. A cycle (calib uses the tracer, the tracer uses calib)
means neither can be understood, tested or replaced alone.
"""
import os
import re
import subprocess

from harness import ROOT, check

USER = os.path.join(ROOT, "user")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)\.h"', re.M)


def module_graph():
    """{module: set of modules it uses}, for the modules with a header in user/."""
    names = {f[:-2] for f in os.listdir(USER) if f.endswith((".c", ".h"))}
    graph = {n: set() for n in names}
    for f in os.listdir(USER):
        if not f.endswith((".c", ".h")):
            continue
        with open(os.path.join(USER, f)) as src:
            for dep in INCLUDE.findall(src.read()):
                if dep in names and dep != f[:-2]:
                    graph[f[:-2]].add(dep)
    return graph


def find_cycle(graph):
    """One cycle as a list [a, b, ..., a], or None."""
    state, stack = {}, []

    def visit(n):
        state[n] = "open"
        stack.append(n)
        for d in sorted(graph[n]):
            if state.get(d) == "open":
                return stack[stack.index(d):] + [d]
            if d not in state:
                found = visit(d)
                if found:
                    return found
        stack.pop()
        state[n] = "done"
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def test_find_cycle_finds_one():
    """The checker itself: a constructed loop is found, a chain is not."""
    check(find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"], "loop missed")
    check(find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None, "chain taken for a loop")


def test_no_include_cycle():
    graph = module_graph()
    check("tracer" in graph and "calib" in graph, f"user/ modules not found in {USER}")
    cycle = find_cycle(graph)
    check(cycle is None, "include cycle among user/ modules: " + " -> ".join(cycle or []))


def test_every_header_compiles_alone():
    """A header states its contract and includes what it needs: each compiles on its own."""
    failed = []
    for h in sorted(f for f in os.listdir(USER) if f.endswith(".h")):
        p = subprocess.run(["gcc", "-fsyntax-only", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror",
                            f"-I{USER}", f"-I{os.path.join(ROOT, 'bpf')}", "-x", "c", "-"],
                           input=f'#include "{h}"\n', capture_output=True, text=True)
        if p.returncode:
            failed.append(f"{h}: {p.stderr.strip().splitlines()[0] if p.stderr.strip() else p.returncode}")
    check(not failed, "headers that do not compile alone:\n" + "\n".join(failed))


TABLE_ROW = re.compile(r"^\|\s*([^|]+?)\s*\|\s*(.+?)\s*\|\s*$")
TABLE_NAME = re.compile(r"`([a-z0-9_]+)\.[ch]`")


def layer_table(readme):
    """{module: row index} from the README's layer table, top row 0; a module named twice: ValueError."""
    rows, inside = {}, False
    for line in readme.splitlines():
        m = TABLE_ROW.match(line)
        if not m:
            if inside:
                break
            continue
        if m.group(1) == "layer":
            inside = True
            continue
        if not inside or set(m.group(1)) <= set("-"):
            continue
        row = len(set(rows.values()) | {-1}) - 1
        for name in TABLE_NAME.findall(m.group(2)):
            if rows.get(name, row) != row:
                raise ValueError(f"{name} is in two rows of the layer table")
            rows[name] = row
    return rows


def layer_violations(graph, layers):
    """'a -> b' for each use of a module in a row above a's, and 'a: not in the table' for each unlisted one."""
    bad = [f"{m}: not in the table" for m in sorted(graph) if m not in layers]
    for m in sorted(graph):
        for dep in sorted(graph[m]):
            if m in layers and dep in layers and layers[dep] < layers[m]:
                bad.append(f"{m} -> {dep}")
    return bad


def test_layer_checker_itself():
    """The checker: a use upward and an unlisted module are found; uses within a row and downward pass."""
    readme = ("| layer | modules |\n|---|---|\n| top | `a.c` (uses b), `x.h` |\n"
              "| low | `b.c`, `c.c` (`bpf/d.h`, `e.bpf.h`) |\n\nafter\n")
    layers = layer_table(readme)
    check(layers == {"a": 0, "x": 0, "b": 1, "c": 1}, f"table read as {layers}")
    check(layer_violations({"a": {"b", "x"}, "b": {"c"}, "c": set(), "x": set()}, layers) == [],
          "allowed uses reported")
    check(layer_violations({"b": {"a"}, "a": set(), "c": set(), "x": set(), "f": set()}, layers) ==
          ["f: not in the table", "b -> a"], "an upward use or an unlisted module missed")


def test_layer_table_holds():
    """Each user/ module is in the README's layer table and uses only modules in its own row or below."""
    with open(os.path.join(ROOT, "README.md")) as f:
        layers = layer_table(f.read())
    check(len(set(layers.values())) >= 8, f"README layer table not found (rows: {layers})")
    bad = layer_violations(module_graph(), layers)
    check(not bad, "the README's layer table does not hold:\n" + "\n".join(bad))
