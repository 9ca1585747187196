#!/usr/bin/env python3
"""Checks the module graph of every crate in the workspace: no import circle anywhere, and in
the core library each layer imports only the layers below it (the rules in ARCHITECTURE.md).

A module is a file. `use crate::a::b`, `crate::a::b` in code and `super::x` are edges; a
`mod x;` declaration and a parent re-exporting its child (`pub use child::X`) are not, since
they only give the child a name. Exit status 1 lists every circle and every broken rule."""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Core library layers: module prefix -> the prefixes it may import (besides itself).
LEAVES = ["error", "config", "location", "timestamp", "ranges", "validator", "checksum", "body_buffers",
          "counters", "retry", "report", "pattern", "transfer_scope", "property_cases"]
CORE_RULES = {
    **{leaf: LEAVES for leaf in LEAVES},
    # A local directory is a store whose writes go through disk/'s gates.
    "source": LEAVES + ["disk"],
    "disk": LEAVES,
    # The engine reaches stores only through the Store seam that source/mod.rs re-exports.
    "transfer": LEAVES + ["source", "disk"],
    # The front door, top down: client -> driver -> plan -> manifest, never back up.
    "manifest": LEAVES + ["disk"],
    "plan": LEAVES + ["source", "disk", "transfer", "manifest"],
    "driver": LEAVES + ["source", "disk", "transfer", "manifest", "plan"],
    "client": LEAVES + ["source", "disk", "transfer", "manifest", "plan", "driver"],
    # What the workspace's tests reach behind the `testing` feature.
    "testing": LEAVES + ["source", "disk", "transfer", "manifest", "plan", "driver", "client"],
}
SEAM_ONLY = {"transfer": {"source": "source"}}

USE_BLOCK = re.compile(r"\b(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.S)
CRATE_PATH = re.compile(r"\bcrate((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
SUPER_PATH = re.compile(r"\b((?:super::)+)([A-Za-z_][A-Za-z0-9_]*)")
COMMENT = re.compile(r"//[^\n]*")


def module_of(src: Path, file: Path) -> str:
    parts = list(file.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return "::".join(parts)


def expand_use(tree: str) -> list[str]:
    """`a::{b, c::{d}}` -> ['a::b', 'a::c::d']"""
    tree = re.sub(r"\s+", "", tree)
    if "{" not in tree:
        return [tree]
    head, _, rest = tree.partition("{")
    inner = rest[: rest.rfind("}")]
    items, depth, current = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            items.append(current)
            current = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        current += ch
    items.append(current)
    return [head + sub for item in items if item for sub in expand_use(item)]


def crate_graph(src: Path, root_file: Path):
    files = [f for f in src.rglob("*.rs") if "bin" not in f.relative_to(src).parts[:1]]
    modules = {module_of(src, f): f for f in files}
    reexports = {}
    for name in re.findall(r"pub use ([^;]+);", root_file.read_text()):
        for path in expand_use(name):
            segments = path.split("::")
            reexports[segments[-1].split(" as ")[-1]] = "::".join(segments[:-1])

    def resolve(segments: list[str]) -> str | None:
        for n in range(len(segments), 0, -1):
            candidate = "::".join(segments[:n])
            if candidate in modules:
                return candidate
        if segments and segments[0] in reexports:
            return resolve(reexports[segments[0]].split("::"))
        return None

    edges = {m: set() for m in modules}
    for module, file in modules.items():
        text = COMMENT.sub("", file.read_text())
        text = text.split("#[cfg(test)]\nmod tests", 1)[0]
        own = module.split("::") if module else []
        is_dir_module = file.name in ("mod.rs", "lib.rs", "main.rs")
        targets = []
        for match in USE_BLOCK.finditer(text):
            is_pub = match.group(0).lstrip().startswith("pub")
            for path in expand_use(match.group(1)):
                segments = path.split(" as ")[0].split("::")
                if segments[0] == "crate":
                    targets.append(segments[1:])
                elif is_dir_module and "::".join(own + segments[:1]) in modules and not is_pub:
                    targets.append(own + segments)
        for match in CRATE_PATH.finditer(text):
            targets.append(match.group(1).strip(":").split("::"))
        for match in SUPER_PATH.finditer(text):
            # `super` of module a::b is a, whether b is a/b.rs or a/b/mod.rs.
            ups = match.group(1).count("super::")
            targets.append(own[: len(own) - ups] + [match.group(2)])
        for segments in targets:
            target = resolve(segments)
            if target is not None and target != module:
                edges[module].add(target)
    return edges


def circles(edges):
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(edges[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def layer_of(module: str) -> str:
    return module.split("::")[0]


def main() -> int:
    problems = []
    for crate in sorted((ROOT / "crates").iterdir()):
        src = crate / "src"
        root_file = src / "lib.rs" if (src / "lib.rs").exists() else src / "main.rs"
        if not root_file.exists():
            continue
        edges = crate_graph(src, root_file)
        for component in circles(edges):
            problems.append(f"{crate.name}: import circle: {' <-> '.join(component)}")
        if crate.name != "parabyte":
            continue
        for module, targets in sorted(edges.items()):
            layer = layer_of(module)
            if module == "":
                continue  # lib.rs names the public API: it may re-export from any layer
            allowed = CORE_RULES.get(layer)
            if allowed is None:
                problems.append(f"parabyte: {module} has no layer rule; add one to CORE_RULES")
                continue
            for target in sorted(targets):
                other = layer_of(target)
                if other == layer:
                    continue
                if other not in allowed:
                    problems.append(f"parabyte: {module} ({layer}) imports {target}: "
                                    f"{layer} may import only {', '.join(sorted(set(allowed)))}")
                elif other in SEAM_ONLY.get(layer, {}) and target != SEAM_ONLY[layer][other]:
                    problems.append(f"parabyte: {module} imports {target}: {layer} reaches "
                                    f"{other} only through its seam ({SEAM_ONLY[layer][other]})")
    for problem in problems:
        print(problem)
    if problems:
        print(f"check-layers: {len(problems)} problem(s); the rules are in ARCHITECTURE.md")
        return 1
    print("check-layers: no import circle, every layer imports only what it may")
    return 0


if __name__ == "__main__":
    sys.exit(main())
