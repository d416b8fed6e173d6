"""One marked section of bench/results.md, written by a bench script (profiles.py, attach_busy.py)."""
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def write_section(name, text):
    """Puts text between <!-- name --> and <!-- /name --> in results.md, replacing what was there
    (appended if the markers are absent)."""
    path = os.path.join(HERE, "results.md")
    begin, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    old = open(path).read() if os.path.exists(path) else ""
    block = f"{begin}\n{text}{end}\n"
    if begin in old and end in old:
        new = old[:old.index(begin)] + block + old[old.index(end) + len(end) + 1:]
    else:
        new = old.rstrip("\n") + "\n\n" + block
    with open(path, "w") as f:
        f.write(new)
