#!/usr/bin/env python3
"""The manuals against the code, mechanically:

1. docs/element.md's property table against `gst-inspect-1.0 gpunetclassify`: the same
   properties; each row's type, range (where the code's is not the type's whole range),
   default, "When" column (PLAYING, READY, - for read-only), for an enum every value,
   and the `stats` structure's fields against the table of its fields.
2. each tool's options: every `--option` the docs give after `gpunet-TOOL` is in that
   tool's --help, and every option of its --help is named somewhere in README.md or docs/.
3. the option keys of GPUNET_CPU (docs/performance.md, "Options") and GPUNET_CUDA
   (docs/cuda.md, "Options") against the parsers' tables in models/session.c; every
   GPUNET_CPU=/GPUNET_CUDA= value written in the docs names known keys and values.

usage: check_docs.py SOURCE_ROOT [--plugin-dir DIR] [TOOL_EXECUTABLE...]
Exit 77 (skipped) only when gst-inspect-1.0 is missing or no plugin directory is given,
after running the other checks."""
import glob, os, re, shutil, subprocess, sys, tempfile

args = sys.argv[1:]
root = args.pop(0)
plugin_dir = None
if args[:1] == ["--plugin-dir"]:
    plugin_dir = args[1]
    args = args[2:]
tools = args
passed = failed = 0
not_run = []


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAILED:", what, file=sys.stderr)


def read(rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


def section(text, heading):
    """The lines of a markdown section, from HEADING to the next heading of its level."""
    m = re.search(r"^(#+) %s\s*$" % re.escape(heading), text, re.M)
    if not m:
        return ""
    rest = text[m.end():]
    end = re.search(r"^#{1,%d} " % len(m.group(1)), rest, re.M)
    return rest[:end.start()] if end else rest


def table_rows(text):
    """Rows of the markdown tables in TEXT as lists of cells (header and rule lines too)."""
    rows = []
    for line in text.splitlines():
        if line.startswith("|"):
            rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
    return rows


docs_text = read("README.md") + "".join(
    open(p, encoding="utf-8").read() for p in sorted(glob.glob(os.path.join(root, "docs", "*.md"))))

# --- 1. element properties ---------------------------------------------------------
def inspect_props(text):
    props, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"^  ([a-z][a-z0-9-]*)\s*: ", line)
        if m:
            cur = props[m.group(1)] = {"lines": []}
            continue
        if cur is not None and line.startswith("      "):
            cur["lines"].append(line.strip())
        elif cur is not None and not line.strip():
            cur = None
    for p in props.values():
        body = "\n".join(p["lines"])
        flags = re.search(r"flags: (.*)", body).group(1)
        p["when"] = ("PLAYING" if "PLAYING" in flags else
                     "READY" if "changeable only in NULL or READY" in flags else
                     "-" if "writable" not in flags else "?")
        kind = re.search(r"^(String|Boolean|Unsigned Integer64|Unsigned Integer|Integer64|"
                         r"Integer|Float|Double|Enum|Boxed pointer|Object)\b", body, re.M)
        p["type"] = kind.group(1) if kind else "?"
        r = re.search(r"Range:\s*(\S+)\s*-\s*(\S+)", body)
        p["range"] = (float(r.group(1)), float(r.group(2))) if r else None
        d = re.search(r'Default:\s*(?:\d+, )?("[^"]*"|\S+)', body)
        p["default"] = d.group(1).strip('"') if d else None
        p["nicks"] = re.findall(r"^\(\d+\): (\S+)", body, re.M)
        p["fields"] = set(re.findall(r"^([a-z][a-z0-9-]*): ", body, re.M)) - {"flags"}
    return props


DOC_TYPE = {"string": "String", "boolean": "Boolean", "uint": "Unsigned Integer",
            "uint64": "Unsigned Integer64", "int": "Integer", "float": "Float",
            "enum": "Enum", "GstStructure": "Boxed pointer"}
UNBOUNDED = {2**31 - 1, 2**32 - 1, 2**63 - 1, 2**64 - 1, -2**31, -2**63}


def num(s):
    return float(s)


def check_element():
    gst_inspect = shutil.which("gst-inspect-1.0")
    if not gst_inspect or not plugin_dir:
        not_run.append("element properties (%s)" % ("no gst-inspect-1.0" if not gst_inspect
                                                      else "the plugin is not built"))
        return
    env = dict(os.environ)
    tmp = tempfile.mkdtemp()
    env["GST_PLUGIN_PATH_1_0"] = plugin_dir
    env["GST_REGISTRY_1_0"] = os.path.join(tmp, "registry.bin")
    env["GST_PLUGIN_SYSTEM_PATH_1_0"] = tmp   # our plugin alone: a fast scan
    p = subprocess.run([gst_inspect, "gpunetclassify"], capture_output=True, text=True,
                       env=env, timeout=60)
    shutil.rmtree(tmp, ignore_errors=True)
    check(p.returncode == 0, "gst-inspect-1.0 gpunetclassify runs: %s" % p.stderr.strip())
    if p.returncode != 0:
        return
    code = inspect_props(p.stdout)
    for k in ("name", "parent"):
        code.pop(k, None)
    rows = [r for r in table_rows(section(read("docs/element.md"), "Properties"))
            if len(r) == 4 and r[0].startswith("`")]
    doc = {}
    for r in rows:
        doc[r[0].strip("`")] = r
    for name in sorted(set(code) - set(doc)):
        check(False, "property %s (gst-inspect-1.0) has a row in docs/element.md's "
              "property table" % name)
    for name in sorted(set(doc) - set(code)):
        check(False, "docs/element.md documents property %s, which the element does not "
              "have" % name)
    for name in sorted(set(code) & set(doc)):
        c, (_, typ, when, meaning) = code[name], doc[name]
        m = re.match(r"^(\w+)(?:\s+(-?[\d.]+)\.\.(-?[\d.]+))?(?:\s+\w+)?(?:,\s*(.*))?$", typ)
        check(m is not None, "%s: type cell '%s' reads 'TYPE [MIN..MAX], DEFAULT'" % (name, typ))
        if not m:
            continue
        t, lo, hi, default = m.groups()
        check(DOC_TYPE.get(t) == c["type"], "%s: documented type %s, gst-inspect-1.0 says %s"
              % (name, t, c["type"]))
        if lo is not None:
            check(c["range"] == (num(lo), num(hi)), "%s: documented range %s..%s, "
                  "gst-inspect-1.0 says %s" % (name, lo, hi, c["range"]))
        elif c["range"] and c["range"][1] not in UNBOUNDED:
            check(False, "%s: the type cell gives no range, but the element's is %g..%g"
                  % (name, *c["range"]))
        check(when == c["when"], "%s: documented When '%s', flags say '%s'"
              % (name, when, c["when"]))
        default = (default or "").strip()
        if c["when"] == "-":
            check(default.startswith("read-only"), "%s is read-only: its type cell says "
                  "'read-only'" % name)
        elif default:
            alts = [a.strip().strip("`").strip('"')
                    for a in re.split(r"\s*\(|\s+without\b|\)", default)
                    if a.strip() and not re.search(r"[a-z]{4,} [A-Z]", a)]
            want = c["default"]
            values = {v if v not in ("none",) else "null" for v in
                      (re.sub(r"\s+without.*", "", a) for a in alts)}
            if c["type"] in ("Float", "Integer", "Unsigned Integer", "Unsigned Integer64"):
                ok = any(re.fullmatch(r"-?[\d.]+", v) and num(v) == num(want) for v in values)
            else:
                ok = want in values
            check(ok, "%s: documented default '%s', gst-inspect-1.0 says '%s'"
                  % (name, default, want))
        else:
            check(False, "%s: the type cell names no default" % name)
        if c["type"] == "Boxed pointer":   # stats: its fields, in the table of fields
            fields = set()
            for r in table_rows(section(read("docs/element.md"), "Live sources and stats")):
                if r and r[0].startswith("`") and len(r) == 3:
                    fields |= set(re.findall(r"`([a-z][a-z0-9-]*)`", r[0]))
            check(c["fields"] and c["fields"] == fields, "%s: the fields gst-inspect-1.0 "
                  "shows %s are docs/element.md's table of fields %s"
                  % (name, sorted(c["fields"]), sorted(fields)))
        for nick in c["nicks"]:
            check("`%s`" % nick in meaning, "%s: value %s is described in its row"
                  % (name, nick))


# --- 2. tool options -----------------------------------------------------------------
def tool_options(exe):
    p = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, LC_ALL="C"))
    return set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", p.stdout + p.stderr))


def check_tools():
    names = {}
    for exe in tools:
        names[os.path.basename(exe)[len("gpunet-"):]] = tool_options(exe)
    if not names:
        not_run.append("tool options (no tools given)")
        return
    alt = "|".join(sorted(map(re.escape, names), key=len, reverse=True))
    text = docs_text.replace("\\\n", " ")
    # commands: inline code and the lines of code blocks (fenced or indented)
    spans, fenced = re.findall(r"`([^`]+)`", text), False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif fenced or line.startswith("    "):
            spans.append(line)
    for s in spans:
        for m in re.finditer(r"gpunet-(%s)(?![\w.-])(.*)" % alt, s):
            rest = re.split(r"gpunet-[a-z]|[|;()]|#SBATCH", m.group(2))[0]
            for o in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", rest):
                check(o in names[m.group(1)], "the docs give gpunet-%s %s, which its --help "
                      "does not list ('%s')" % (m.group(1), o, s.strip()[:100]))
    for tool, opts in sorted(names.items()):
        for o in sorted(opts - {"--help", "--help-all", "--help-gst"}):
            # gpunet-cameras: each [service] key is also an option (docs/cameras.md)
            documented = re.search(r"%s(?![\w-])" % re.escape(o), docs_text) or (
                tool == "cameras" and re.search(r"^\| `%s` \|" % re.escape(o[2:]),
                                                read("docs/cameras.md"), re.M))
            check(documented, "gpunet-%s %s is named in README.md or docs/" % (tool, o))


# --- 3. GPUNET_CPU / GPUNET_CUDA option keys ----------------------------------------------
def check_options():
    src = read("models/session.c")
    cpu = {}
    for m in re.finditer(r'\{ "(\w+)", offsetof \(gpunet_cpu_options, \w+\), \{([^}]*)\},\s*'
                         r'\{([^}]*)\}', src):
        names = re.findall(r'"([^"]+)"', m.group(2))
        values = [v.strip() for v in m.group(3).split(",")]
        cpu[m.group(1)] = dict(zip(names, values))
    check(len(cpu) >= 10, "models/session.c's cpu_keys read: %s" % sorted(cpu))
    listed = re.search(r"the keys are ([\w ,]+?) \"", src)
    check(listed is not None and set(re.split(r", | and ", listed.group(1))) == set(cpu),
          "the GPUNET_CPU error sentence lists every key of cpu_keys")
    cuda = {}
    for m in re.finditer(r'\{ "(\w+)=(\w+)", offsetof \(gpunet_cuda_options', src):
        cuda.setdefault(m.group(1), set()).add(m.group(2))
    check(len(cuda) >= 5, "models/session.c's cuda_pairs read: %s" % sorted(cuda))

    rows = [r for r in table_rows(section(read("docs/performance.md"), "Options"))
            if r and re.fullmatch(r"`\w+`", r[0])]
    doc = {r[0].strip("`"): set(re.findall(r"`([^`]+)`", r[1])) for r in rows}
    for key in sorted(set(cpu) - set(doc)):
        check(False, "GPUNET_CPU key %s has a row in docs/performance.md's Options table" % key)
    for key in sorted(set(doc) - set(cpu)):
        check(False, "docs/performance.md's Options table has key %s, which the parser "
              "does not take" % key)
    for key in sorted(set(doc) & set(cpu)):
        code_vals = cpu[key]
        check(doc[key] <= set(code_vals), "GPUNET_CPU %s: documented values %s are "
              "parsed (%s)" % (key, sorted(doc[key]), sorted(code_vals)))
        # an undocumented value is only an alias of a documented one (block=0 is auto)
        meant = {code_vals[v] for v in doc[key] if v in code_vals}
        extra = [v for v in code_vals if v not in doc[key] and code_vals[v] not in meant]
        check(not extra, "GPUNET_CPU %s: values %s are in the table" % (key, extra))

    table = section(read("docs/cuda.md"), "Options")
    doc_cuda = {}
    for r in table_rows(table):
        for k, v in re.findall(r"GPUNET_CUDA=(\w+)=(\w+)", r[0] if r else ""):
            doc_cuda.setdefault(k, set()).add(v)
    for key in sorted(set(cuda) - set(doc_cuda)):
        check(False, "GPUNET_CUDA key %s has a row in docs/cuda.md's Options table" % key)
    for key in sorted(doc_cuda):
        check(key in cuda and doc_cuda[key] <= cuda[key], "docs/cuda.md's Options table: "
              "GPUNET_CUDA=%s=%s is a pair the parser takes" % (key, ",".join(doc_cuda[key])))

    # every spec written out in the docs parses
    for var, keys in (("GPUNET_CPU", {k: set(v) for k, v in cpu.items()}), ("GPUNET_CUDA", cuda)):
        for spec in re.findall(r"%s=([\w=,]+)" % var, docs_text):
            for pair in spec.split(","):
                k, _, v = pair.partition("=")
                check(k in keys and v in keys[k], "%s=%s in the docs: '%s' is a key=value "
                      "the parser takes" % (var, spec, pair))


check_element()
check_tools()
check_options()
print("%d passed, %d failed%s" % (passed, failed,
      "; not run: " + ", ".join(not_run) if not_run else ""))
sys.exit(1 if failed else 77 if not_run else 0)
