#!/usr/bin/env python3
"""The comparison scripts in tools/ need torch, cv2 and NVIDIA's code, which the test
machines may lack, so they are checked without running them: every tools/*.py compiles, and
every name one of them imports from another tools/ module is defined at that module's top
level (compare_opencv.py once imported a helper compare_pytorch.py no longer had)."""
import ast, os, sys

tools = sys.argv[1]
passed = failed = 0

def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAILED:", what, file=sys.stderr)

def top_level_names(tree):
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        names.add(n.id)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                names.add((a.asname or a.name).split(".")[0])
    return names

scripts = sorted(f for f in os.listdir(tools) if f.endswith(".py"))
check(len(scripts) >= 3, "tools/ has its comparison scripts (found %d)" % len(scripts))
trees = {}
for f in scripts:
    path = os.path.join(tools, f)
    try:
        with open(path, encoding="utf-8") as fh:
            trees[f[:-3]] = ast.parse(fh.read(), path)
        check(True, f)
    except SyntaxError as e:
        check(False, "%s does not parse: %s" % (f, e))

imports = 0
for name, tree in trees.items():
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in trees and node.level == 0:
            defined = top_level_names(trees[node.module])
            for a in node.names:
                imports += 1
                check(a.name in defined, "%s.py imports %s from %s.py, which does not define it"
                      % (name, a.name, node.module))
check(imports >= 4, "the scripts' imports from each other were found (%d)" % imports)

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
