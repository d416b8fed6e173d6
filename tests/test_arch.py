"""The source's structure: no include cycle among the user/ modules, every header compiles alone
(no root, no BPF).

A module is foo.c with foo.h. Module A uses module B when foo.c or foo.h of A
includes B's header. A cycle (calib uses the tracer, the tracer uses calib)
means neither can be understood, tested or replaced alone.
"""
import os
import re
import shutil
import subprocess
import tempfile

from harness import ROOT, check

USER = os.path.join(ROOT, "user")
INCLUDE = re.compile(r'^\s*#\s*include\s+"(?:([a-z]+)/)?([a-z0-9_]+)\.h"', re.M)
# user/'s folders, bottom first: a folder includes only from itself and the folders before it;
# the files on top (main.c, opts.c, the run) may include from any (docs/architecture.md says why).
LAYERS = ["base", "elf", "target", "format", "trace", "stacks", "profile", "report"]
TOP = "(top)"


def sources(user=USER):
    """(folder, file name) of each .c and .h under user/, folder TOP for the files on top."""
    for root, _, files in os.walk(user):
        rel = os.path.relpath(root, user)
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                yield (TOP if rel == "." else rel), os.path.join(root, f)


def module_graph(user=USER):
    """{module: set of modules it uses}, for the modules under user/ (a module is foo.c with foo.h)."""
    folder = {os.path.basename(p)[:-2]: d for d, p in sources(user)}
    graph = {n: set() for n in folder}
    for _, path in sources(user):
        me = os.path.basename(path)[:-2]
        with open(path) as src:
            for _, dep in INCLUDE.findall(src.read()):
                if dep in folder and dep != me:
                    graph[me].add(dep)
    return graph


def folder_violations(user=USER):
    """'file: includes "x/y.h" from a folder above' for each include that goes up the layers,
    each include of a user/ header not named by its folder, and each folder not in LAYERS."""
    rank = {d: i for i, d in enumerate(LAYERS)}
    rank[TOP] = len(LAYERS)
    folder = {os.path.basename(p)[:-2]: d for d, p in sources(user)}
    bad = sorted({f"user/{d}: a folder not in LAYERS" for d, _ in sources(user) if d not in rank})
    for d, path in sources(user):
        with open(path) as src:
            for inc_dir, dep in INCLUDE.findall(src.read()):
                if dep not in folder:
                    continue
                where = os.path.relpath(path, user)
                if (inc_dir or TOP) != folder[dep] and folder[dep] != TOP:
                    bad.append(f'{where}: includes "{dep}.h" without its folder {folder[dep]}/')
                elif d in rank and rank.get(folder[dep], 0) > rank[d]:
                    bad.append(f'{where}: includes "{folder[dep]}/{dep}.h" from a folder above')
    return bad


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
    for h in sorted(os.path.relpath(p, USER) for _, p in sources() if p.endswith(".h")):
        p = subprocess.run(["gcc", "-fsyntax-only", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror",
                            f"-I{USER}", f"-I{os.path.join(ROOT, 'bpf')}", "-x", "c", "-"],
                           input=f'#include "{h}"\n', capture_output=True, text=True)
        if p.returncode:
            failed.append(f"{h}: {p.stderr.strip().splitlines()[0] if p.stderr.strip() else p.returncode}")
    check(not failed, "headers that do not compile alone:\n" + "\n".join(failed))


def test_folder_checker_finds_a_planted_violation():
    """The checker on a copy of user/: clean as it is, and a planted upward include is found."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "user")
        shutil.copytree(USER, copy)
        check(folder_violations(copy) == [], "the copy is not clean")
        with open(os.path.join(copy, "base", "log.c"), "a") as f:
            f.write('#include "report/report.h"\n#include "tracer.h"\n')
        os.makedirs(os.path.join(copy, "misc"))
        open(os.path.join(copy, "misc", "x.c"), "w").close()
        bad = folder_violations(copy)
        check(bad == ["user/misc: a folder not in LAYERS",
                      'base/log.c: includes "report/report.h" from a folder above',
                      'base/log.c: includes "tracer.h" without its folder trace/'],
              f"planted violations read as {bad}")


def test_folders_in_layers():
    """user/ holds only folders by layer (and the files on top); no folder includes from one above it."""
    tops = sorted(f for f in os.listdir(USER) if os.path.isfile(os.path.join(USER, f)))
    check(set(tops) <= {"main.c", "opts.c", "opts.h", "run.c", "run.h", "follow.c", "follow.h",
                        "commands.c", "commands.h"}, f"files on top of user/ besides the lifecycle: {tops}")
    bad = folder_violations()
    check(not bad, "includes that break user/'s layers:\n" + "\n".join(bad))
