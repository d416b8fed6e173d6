"""fnprof as an installed tool: --version, make install, the man page, bash completion,
long names in the tables, -p with several PIDs, and -a (every process)."""
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile

from harness import (FNPROF, ROOT, Skip, Target, check, final_report, func, run_fnprof, target, traced, truth,
                     wait_for)

MAN = os.path.join(ROOT, "docs", "fnprof.8")
COMPLETION = os.path.join(ROOT, "bash-completion", "fnprof")


def version_of_header():
    with open(os.path.join(ROOT, "user", "base", "version.h")) as f:
        return re.search(r'#define FNPROF_VERSION "([^"]+)"', f.read()).group(1)


def test_version():
    p = run_fnprof(["--version"])
    want = version_of_header()
    check(p.returncode == 0 and p.stdout == f"fnprof {want}\n", f"{p.returncode} {p.stdout!r} {p.stderr!r}")
    check(re.fullmatch(r"\d+\.\d+\.\d+", want), f"version {want!r} is not X.Y.Z")
    # -v adds the libbpf fnprof runs with and the kernel, as a bug report needs them.
    p = run_fnprof(["--version", "-v"])
    lines = p.stdout.splitlines()
    check(p.returncode == 0 and len(lines) > 4 and lines[3] == "kernel features:", p.stdout)
    check(re.match(r"libbpf v?\d+\.\d+", lines[1]), lines[1])
    check(lines[2].split()[2] == os.uname().release, f"{lines[2]!r} vs {os.uname().release}")
    # Issue 34: then what this kernel offers, found on it: one line per feature, yes, no with the
    # first kernel that has it (or the option it needs), or unknown with why.
    feats = {}
    for ln in lines[4:]:
        m = re.fullmatch(r"  (.+): (yes|no \((?:Linux \d+\.\d+|CONFIG_\w+|no kernel does|.*; Linux \d+\.\d+)\)"
                         r"|unknown \(.+\))", ln)
        check(m or re.fullmatch(r"  \(the uprobe instructions were probed in \d+\.\d ms\)", ln), f"{ln!r}")
        if m:
            feats[m.group(1)] = m.group(2)
    for name in ("uprobe emulates push %rbp", "uprobe emulates nopw 0x0(%rax,%rax,1)", "uprobe optimizes the 5-byte nop",
                 "uprobe_multi links", "uretprobe system call", "uprobe sessions", "bpf_loop", "task storage maps",
                 "ring buffers", "BTF uprobes_state.head_tramps"):
        check(name in feats, f"{name} not listed: {p.stdout}")
    # Every kernel fnprof runs on (5.10 on) has these: a probe that says otherwise is broken.
    for name in ("uprobe emulates push %rbp", "uprobe emulates jmp", "ring buffers"):
        check(feats[name] == "yes", f"{name}: {feats[name]}")
    # And no kernel up to 6.18 emulates endbr64: a probe that says it does saw no single step at all.
    check(feats["uprobe emulates endbr64"] == "no (no kernel does)", f"endbr64: {feats['uprobe emulates endbr64']}")


def test_make_install_destdir_prefix():
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.run(["make", "-s", "install", f"DESTDIR={d}", "PREFIX=/usr/local"], cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
        check(p.returncode == 0, p.stdout + p.stderr)
        base = os.path.join(d, "usr", "local")
        for rel, src in (("bin/fnprof", FNPROF), ("share/man/man8/fnprof.8", MAN),
                         ("share/bash-completion/completions/fnprof", COMPLETION)):
            path = os.path.join(base, rel)
            check(os.path.isfile(path), f"{rel} not installed under {base}")
            with open(path, "rb") as a, open(src, "rb") as b:
                check(a.read() == b.read(), f"{rel} differs from {src}")
        check(os.access(os.path.join(base, "bin", "fnprof"), os.X_OK), "bin/fnprof not executable")
        p = subprocess.run([os.path.join(base, "bin", "fnprof"), "--version"], capture_output=True, text=True)
        check(p.stdout.startswith("fnprof "), p.stdout)


def test_make_install_quotes_its_paths():
    """DESTDIR with a space and a ';': installed there, nothing run, nothing written in the source tree
    (before: ./dir/usr/... in the tree, and the ';' ran a command); uninstall removes the same files."""
    with tempfile.TemporaryDirectory() as d:
        ran = os.path.join(d, "ran")
        dest = os.path.join(d, f"pkg dir;touch {ran};x'y")
        before = set(os.listdir(ROOT))
        p = subprocess.run(["make", "-s", "install", f"DESTDIR={dest}", "PREFIX=/usr"], cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
        check(p.returncode == 0, p.stdout + p.stderr)
        check(not os.path.exists(ran), "a ';' in DESTDIR ran a command")
        check(set(os.listdir(ROOT)) == before, f"written in the source tree: {set(os.listdir(ROOT)) - before}")
        installed = [os.path.join(dest, "usr", rel) for rel in
                     ("bin/fnprof", "share/man/man8/fnprof.8", "share/bash-completion/completions/fnprof")]
        check(all(os.path.isfile(f) for f in installed), f"not installed under {dest!r}")
        p = subprocess.run(["make", "-s", "uninstall", f"DESTDIR={dest}", "PREFIX=/usr"], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
        check(p.returncode == 0 and not any(os.path.exists(f) for f in installed), p.stdout + p.stderr)
        check(not os.path.exists(ran), "a ';' in DESTDIR ran a command (uninstall)")


def test_man_page_lints_clean():
    if not shutil.which("mandoc"):
        raise Skip("mandoc not installed (make test-deps)")
    p = subprocess.run(["mandoc", "-T", "lint", "-W", "style", MAN], capture_output=True, text=True)
    # Lines about the system's man database (an Xr lookup: bpftrace's page is there only where
    # bpftrace is installed) are not the page's.
    own = [ln for ln in (p.stdout + p.stderr).splitlines()
           if "fnprof.8" in ln and "referenced manual not found" not in ln]
    # Exit 1 is mandoc's for warnings and style notes, each of which names the page when it is the page's.
    check(p.returncode <= 1 and not own, "\n".join(own) or f"mandoc exit {p.returncode}")


def options_of(text):
    """The option names (-x, --long) a text mentions."""
    return set(re.findall(r"(?<![\w-])(--?[a-zA-Z][a-zA-Z-]*)", text))


def rendered_man():
    p = subprocess.run(["mandoc", "-T", "ascii", MAN], capture_output=True, text=True)
    check(p.returncode == 0, p.stderr)
    return re.sub(".\b", "", p.stdout)  # overstrike (bold, underline) off


def test_man_page_documents_every_option():
    if not shutil.which("mandoc"):
        raise Skip("mandoc not installed (make test-deps)")
    helptext = run_fnprof(["--help"]).stdout
    # The options of the help's option lines (two spaces, then a dash), not of its prose.
    listed = set()
    for line in helptext.splitlines():
        m = re.match(r" {2,6}(-\w, )?--?[\w-]+", line)
        if m:
            listed |= options_of(m.group(0))
    check(len(listed) > 30 and "--max-overhead" in listed, f"help parsed wrong: {sorted(listed)}")
    man = options_of(rendered_man())
    check(listed <= man, f"--help lists what the man page does not document: {sorted(listed - man)}")
    # And the man page documents no option that fnprof does not have.
    documented = set()
    for line in rendered_man().splitlines():
        if re.match(r" {5}-", line):  # an option's tag line
            documented |= options_of(line)
    unknown = documented - listed
    check(not unknown, f"the man page documents options fnprof lacks: {sorted(unknown)}")


# --- one text per option: --help, the man page and the README's table ------------------------------

def option_key(head):
    """An entry's key: its long option, else its short one (with its argument for -f's forms)."""
    m = re.search(r"--[a-z][\w-]*", head)
    if m:
        return m.group(0)
    m = re.match(r"(-\w)(?:[ ,]+(\S+))?", head)
    if not m:
        return None
    return m.group(1) + (" " + m.group(2) if m.group(1) == "-f" and m.group(2) else "")


def option_arg(head):
    """The argument an entry's head names (SEC, N, FILE, pid|comm|cgroup ...), '' for none."""
    m = re.search(r"(?:--?[\w-]+)[ =]([A-Z][A-Z:]*|[a-z]+ ?\| ?[\w| ]+)", head)
    return m.group(1).replace(" ", "") if m else ""


def entries(lines, head_re, cont):
    """{key: [head, text]} from lines where head_re matches an entry's head (group 1; group 2: text on
    the same line) and cont(line) tells its continuation lines."""
    out, cur = {}, None
    for line in lines:
        m = re.match(head_re, line)
        if m and not cont(line):
            cur = option_key(m.group(1))
            out[cur] = [m.group(1), m.group(2) or ""]
        elif cur and cont(line):
            out[cur][1] += " " + line.strip()
        else:
            cur = None
    return out


def option_texts():
    """Each option's entry in --help, the man page (as rendered) and README.md's table, by long name."""
    helptext = run_fnprof(["--help"]).stdout.splitlines()
    h = entries(helptext, r" {2,6}(-\S.*?)(?: {2,}(.*)|$)", lambda ln: ln.startswith(" " * 20))
    m = entries(rendered_man().splitlines(), r" {5}(-\S.*?)(?: {2,}(.*)|$)", lambda ln: ln.startswith(" " * 10))
    alias = {"-f NAME": "--func"}
    for head, _ in h.values():
        a = re.match(r"(-\w), (--[\w-]+)", head)
        if a:
            alias[a.group(1)] = a.group(2)
    r = {}
    with open(os.path.join(ROOT, "README.md")) as f:
        for line in f.read().replace("\\|", "\0").splitlines():
            row = re.match(r"\| `(-[^|]*?)` \| (.*) \|$", line)
            if row:
                head = row.group(1).replace("`", "").replace("\0", "|")
                r[alias.get(option_key(head), option_key(head))] = [head, row.group(2).replace("\0", "|")]
    for d in (h, m, r):
        d.pop(None, None)
    return h, m, r


def plain(text):
    return " ".join(text.replace("`", "").replace("'", "").split())


def option_facts(text):
    """What must agree: the numbers, the signals and the options an entry names."""
    text = plain(text)
    return (set(re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])", text)), set(re.findall(r"SIG[A-Z]+", text)),
            set(re.findall(r"(?<![\w-])--?[a-zA-Z][\w-]*", text)))


# Facts the three once told apart (issue 37): each entry must say them, in these words.
OPTION_FACTS = {
    "--max-threads": ["until it exits"],
    "--list": ["file offset, size, site kind, bytes skipped, exit mode, function"],
    "--call-graph": ["fp for Go"],
    "--duration": ["500ms", "SIGHUP"],
    "--interval": ["500ms", "a total follows at the end"],
    "--slow": ["a unit is needed"],
    "--all": ["512", "64 an unwinder"],
}


def test_option_texts_agree_in_help_man_page_and_readme():
    # The man page gave -a's unwinder cap as 256 (64 in fact, and in the README), --max-threads'
    # memory "while inside traced calls" (until the thread exits), and each source its own columns
    # of --list; --help left out SIGHUP, "fp for Go" and what -a excludes. Now every option has an
    # entry in each, with the same argument; the numbers, signals and options --help names are in
    # the man page's and the README's entries, the man page's in the README's (the most detailed).
    if not shutil.which("mandoc"):
        raise Skip("mandoc not installed (make test-deps)")
    h, m, r = option_texts()
    check(len(h) >= 40 and "--max-overhead" in h, f"help parsed wrong: {sorted(h)}")
    check(set(h) == set(m) == set(r), f"entries: only in --help {sorted(set(h) - set(m) - set(r))}, not in the "
          f"man page {sorted(set(h) - set(m))}, not in README {sorted(set(h) - set(r))}, not in --help "
          f"{sorted((set(m) | set(r)) - set(h))}")
    bad = []
    for k in sorted(h):
        args = [option_arg(e[k][0]) for e in (h, m, r)]
        if len(set(args)) > 1:
            bad.append(f"{k}: arguments {args}")
        (hn, hs, ho), (mn, ms, mo), (rn, rs, ro) = (option_facts(e[k][1]) for e in (h, m, r))
        if not (hn <= mn and hn <= rn and mn <= rn):
            bad.append(f"{k}: numbers --help {sorted(hn)}, man {sorted(mn)}, README {sorted(rn)}")
        if not hs == ms == rs:
            bad.append(f"{k}: signals --help {sorted(hs)}, man {sorted(ms)}, README {sorted(rs)}")
        if not (ho <= mo and ho <= ro):
            bad.append(f"{k}: --help names {sorted(ho - mo - ro)} that the man page or README do not")
        for fact in OPTION_FACTS.get(k, []):
            missing = [n for n, e in (("--help", h), ("man", m), ("README", r)) if fact not in plain(e[k][1])]
            if missing:
                bad.append(f"{k}: {fact!r} missing in {missing}")
    check(not bad, "\n".join(bad))


def doc_examples():
    """The example command lines of README.md and docs/*.md that run a program of tests/bin."""
    out = []
    for name in ["README.md"] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
        with open(os.path.join(ROOT, name)) as f:
            for line in f:
                m = re.match(r"(?:\$ sudo |\./)(fnprof .*tests/bin/.*?)(?:\s+#.*)?$", line.strip())
                if m:
                    out.append(m.group(1))
    return out


def test_doc_examples_run_after_make_demo():
    # The README's examples ran tests/bin/slowcall and tests/bin/work, which `make demo` (its setup
    # command) did not build. Every example that runs a program of tests/bin runs as written.
    db = subprocess.run(["make", "-pnq", "demo"], cwd=ROOT, capture_output=True, text=True, timeout=60).stdout
    demo = next((ln.split()[1:] for ln in db.splitlines() if ln.startswith("demo:")), [])
    examples = doc_examples()
    check(len(examples) >= 6, f"examples found: {examples}")
    with tempfile.TemporaryDirectory() as d:
        os.symlink(os.path.join(ROOT, "tests"), os.path.join(d, "tests"))
        for ex in examples:
            argv = shlex.split(ex)
            progs = [a for a in argv if a.startswith("tests/bin/")]
            check(all(p in demo for p in progs), f"make demo does not build {progs} for: {ex}")
            p = subprocess.run([FNPROF] + argv[1:], cwd=d, capture_output=True, text=True, timeout=60)
            check(p.returncode == 0, f"{ex}: exit {p.returncode}: {p.stderr[-1500:]}")


def test_durations_take_units():
    # -d 1s was refused while --slow 1s was accepted, and --slow 2 meant 2 ns.
    with Target("work", "loop") as t:
        p = run_fnprof(["-p", str(t.pid), "-f", "spin_us", "-d", "600ms", "-i", "200ms", "--json"], timeout=30)
        check(p.returncode == 0, p.stderr[-2000:])
        reps = [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")]
        check(len(reps) >= 3 and reps[-1]["total"] and 0.5 < reps[-1]["interval_s"] < 1.5,
              f"{[(r['interval_s'], r['total']) for r in reps]}")
    p = run_fnprof(["-f", "handle", "--slow", "2", "--", target("slowcall"), "10"])
    check(p.returncode == 2 and "needs a unit (ns, us, ms, s or m)" in p.stderr, p.stderr)


def complete(words):
    """COMPREPLY of the bash completion for the command line words (the last one being completed)."""
    script = (f'source {COMPLETION}\nCOMP_WORDS=({" ".join(map(repr, words))})\n'
              f'COMP_CWORD={len(words) - 1}\n_fnprof\nprintf "%s\\n" "${{COMPREPLY[@]}}"\n')
    p = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)
    check(p.returncode == 0, p.stderr)
    return p.stdout.split()


def test_bash_completion_options_and_functions():
    check(complete([FNPROF, "--max-o"]) == ["--max-overhead"], complete([FNPROF, "--max-o"]))
    check(set(complete([FNPROF, "--profile", ""])) == {"cpu", "offcpu", "mutex", "heap"}, "profile kinds")
    with Target("work", "loop") as t:
        got = complete([FNPROF, "-p", str(t.pid), "-f", "spin"])
        check("spin_us" in got, f"-f completion in pid {t.pid}: {got}")


EVIL_SRC = """#include <stdio.h>
#include <unistd.h>
__attribute__((noinline)) void evil_fn(void) { __asm__ volatile(""); }
__attribute__((noinline)) void plain_fn(void) { __asm__ volatile(""); }
int main(void) { puts("ready"); fflush(stdout); for (;;) { evil_fn(); plain_fn(); sleep(1); } }
"""


def test_bash_completion_never_runs_a_function_name():
    """A symbol named $(touch ...) (objcopy --redefine-sym) in a process anyone runs: root's TAB after
    -f must not run it (compgen -W expands $(...) in its words), nor offer it; plain names still come."""
    with tempfile.TemporaryDirectory() as d:
        pwned = os.path.join(d, "pwned")
        src, tmp, exe = (os.path.join(d, n) for n in ("evil.c", "evil.tmp", "evil"))
        with open(src, "w") as f:
            f.write(EVIL_SRC)
        subprocess.run(["gcc", "-O2", "-g", "-o", tmp, src], check=True)
        subprocess.run(["objcopy", "--redefine-sym", f"evil_fn=$(touch${{IFS}}{pwned})", tmp, exe], check=True)
        p = subprocess.Popen([exe], stdout=subprocess.PIPE, text=True)
        try:
            check(p.stdout.readline() == "ready\n", "target did not start")
            listed = run_fnprof(["--list", "-p", str(p.pid), "-f", "*"]).stdout
            check("$(touch" in listed, f"the evil name is not in --list: {listed[-1000:]}")
            got = complete([FNPROF, "-p", str(p.pid), "-f", ""])
            check(not os.path.exists(pwned), "completion ran a command named by a function")
            check(not any("$" in w or "touch" in w for w in got), f"evil name offered: {got}")
            check("plain_fn" in got and "main" in got, f"plain names not offered: {got}")
            check(complete([FNPROF, "-p", str(p.pid), "-f", "pla"]) == ["plain_fn"], "prefix match")
        finally:
            p.kill()
            p.wait()


# --- long names -------------------------------------------------------------------------------

HANDLER = "HttpConnectionHandler::handle_incoming_request"
REQUEST = "acme_enterprise_platform::request_processing_pipeline::" + HANDLER
RESPONSE = "acme_enterprise_platform::response_processing_pipeline::" + HANDLER


def table_rows(text, word, column):
    """(name cell, the cells after it) of the table rows that show word; the name column ends where
    the header's next column, column, starts (names may hold spaces: "f(unsigned long)")."""
    header = [ln for ln in text.splitlines() if ln.startswith("FUNCTION")][0]
    w = header.index(column) - (1 if column == "OBJECT" else 5)   # " %-20s" or " %9s"
    return [(ln[:w].rstrip(), ln[w:].split()) for ln in text.splitlines()
            if word in ln and not ln.startswith("truth")]


def test_long_cxx_name_keeps_the_function_in_the_table():
    p = run_fnprof(["-f", "*request_processing*handle_incoming_request*", "--", target("longnames"), "2000", "0"])
    check(p.returncode == 0, p.stderr[-3000:])
    want = truth(p.stderr, "request")["calls"]
    rows = table_rows(p.stderr, "handle_incoming_request", "CALLS")
    check(len(rows) == 1, f"rows: {rows}")
    name, cells = rows[0]
    check(name.endswith("::handle_incoming_request") and int(cells[0]) == want == 2000,
          f"row {rows[0]!r}, truth {want}")
    header = [ln for ln in p.stderr.splitlines() if ln.startswith("FUNCTION")][0]
    check(header.index("CALLS") < 40, f"column widened without need: {header!r}")


def test_long_names_alike_never_look_the_same():
    """Two methods alike but for the middle of their names: two rows that differ, each with its calls,
    in the tracing table and the sampling table; JSON keeps the whole names."""
    p = run_fnprof(["-f", "*handle_incoming_request*", "--", target("longnames"), "2000", "1000"])
    check(p.returncode == 0, p.stderr[-3000:])
    rows = table_rows(p.stderr, "handle_incoming_request", "CALLS")
    check(len(rows) == 2 and rows[0][0] != rows[1][0], f"rows alike: {rows}")
    calls = {("request" if "request_processing" in n else "response"): int(c[0]) for n, c in rows}
    check(calls == {"request": truth(p.stderr, "request")["calls"], "response": truth(p.stderr, "response")["calls"]},
          f"calls {calls} vs truth; rows {rows}")
    rep, _ = traced(["-f", "*handle_incoming_request*"], target("longnames"), 2000, 1000)
    names = sorted(f["name"] for f in rep["functions"])
    check(names[0].startswith(REQUEST) and names[1].startswith(RESPONSE), f"JSON names cut: {names}")
    # Sampling: both burn about as much CPU (the same work per call, as many calls).
    p = run_fnprof(["-F", "499", "--", target("longnames"), "20000", "20000", "100000"])
    check(p.returncode == 0, p.stderr[-3000:])
    rows = table_rows(p.stderr, "handle_incoming_request", "OBJECT")
    check(len(rows) == 2 and rows[0][0] != rows[1][0] and all(n.endswith(")") for n, _ in rows),
          f"sampling rows alike: {rows}")


# --- -p P1,P2 ---------------------------------------------------------------------------------

def entry_patched(pid, name):
    """Whether function name of work in process pid holds a breakpoint (its uprobe is in)."""
    nm = subprocess.run(["nm", target("work")], capture_output=True, text=True).stdout
    off = int(next(ln.split()[0] for ln in nm.splitlines() if ln.endswith(f" T {name}")), 16)
    base = next(int(ln.split("-")[0], 16) for ln in open(f"/proc/{pid}/maps")
                if ln.split()[-1] == target("work") and int(ln.split()[2], 16) == 0)
    with open(f"/proc/{pid}/mem", "rb") as m:
        m.seek(base + off)
        return m.read(1) == b"\xcc"


def gated(calls):
    """work gate CALLS: waits for a line on stdin, then calls outer() CALLS times and exits."""
    proc = subprocess.Popen([target("work"), "gate", str(calls)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    check("ready" in proc.stdout.readline(), "work gate did not start")
    return proc


def test_pid_list_reports_each_process():
    """-p A,B: two processes of one program, each with its own count (3000 and 5000 calls), JSON with its pid."""
    procs = [gated(3000), gated(5000)]
    try:
        pids = [p.pid for p in procs]
        fp = subprocess.Popen([FNPROF, "-p", f"{pids[0]},{pids[1]}", "-f", "outer", "--json"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        check(wait_for(lambda: all(entry_patched(p, "outer") for p in pids) or fp.poll() is not None, 30),
              "probes never in both processes")
        want = {}
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        for p in procs:
            _, err = p.communicate(timeout=60)
            want[p.pid] = truth(err, "outer")["calls"]
        # Both targets gone: fnprof ends by itself.
        fout, ferr = fp.communicate(timeout=60)
        check(fp.returncode == 0, f"fnprof exit {fp.returncode}: {ferr[-2000:]}")
        rep = final_report(fout)
        got = {rep["pid"]: func(rep, "outer")["calls"]}
        for proc in rep["processes"]:
            got[proc["pid"]] = func(proc, "outer")["calls"]
        check(got == want == {pids[0]: 3000, pids[1]: 5000}, f"calls per pid {got}, truth {want}")
        check(rep["children"] == [], f"no fork children: {rep['children']}")
    finally:
        for p in procs:
            p.kill()
            p.communicate()


def test_pid_list_counts_events_per_process():
    """-p A,B -f spin_us -e task-clock (before: refused with several PIDs): each process's spin_us
    with its own task-clock per call, against the CPU time per call each target measured itself."""
    with Target("work", "loop") as a, Target("work", "loop") as b:
        p = run_fnprof(["-p", f"{a.pid},{b.pid}", "-f", "spin_us", "-e", "task-clock", "-d", "1", "--json"])
        check(p.returncode == 0, p.stderr[-2000:])
        rep = final_report(p.stdout)
        got = {rep["pid"]: func(rep, "spin_us")}
        for proc in rep["processes"]:
            got[proc["pid"]] = func(proc, "spin_us")
        check(set(got) == {a.pid, b.pid}, f"reports of {sorted(got)}")
        for t in (a, b):
            want = truth(t.stop()[1], "spin_us")["cpu_avg_ns"]
            per_call = got[t.pid]["counters"]["task-clock"]["per_call"]
            check(abs(per_call - want) <= 0.2 * want, f"pid {t.pid}: task-clock {per_call:.0f} ns a call, "
                  f"its own clock {want:.0f} ns")


def test_pid_list_table_and_errors():
    with Target("work", "loop") as a, Target("work", "loop") as b:
        p = run_fnprof(["-p", f"{a.pid},{b.pid}", "-f", "spin_us", "-d", "0.5"])
        check(p.returncode == 0, p.stderr[-2000:])
        heads = re.findall(r"^total: pid (\d+)", p.stderr, re.M)
        check(heads == [str(a.pid), str(b.pid)], f"reports {heads}:\n{p.stderr[-2000:]}")
        for args, what in (([f"{a.pid},{a.pid}", "-f", "spin_us"], "twice"),
                           ([f"{a.pid},x", "-f", "spin_us"], "invalid PID"),
                           ([f"{a.pid},", "-f", "spin_us"], "invalid PID")):
            p = run_fnprof(["-p"] + args)
            check(p.returncode == 2 and what in p.stderr, f"-p {args}: {p.returncode} {p.stderr!r}")
        p = run_fnprof(["-p", f"{a.pid},999999999", "-f", "spin_us"])
        check(p.returncode == 2 or (p.returncode == 1 and "no such process" in p.stderr), p.stderr)
