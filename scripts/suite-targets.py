#!/usr/bin/env python3
"""Print the ninja targets that the tests of a meson build directory need, leaving out
the tests of the named suites: what `meson test --no-suite S ...` would build.

    scripts/suite-targets.py BUILD_DIR [SUITE ...]

scripts/run-tests.sh builds the sanitizer build with these targets only, so the fast suite
does not wait for the executables of the sweeps that run only behind it (`--slow`); meson's
own `all` target would build every test's executable.
"""
import json
import os
import sys


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    build = os.path.abspath(argv[1])
    skip = set(argv[2:])
    info = os.path.join(build, 'meson-info')
    try:
        with open(os.path.join(info, 'intro-tests.json')) as f:
            tests = json.load(f)
        with open(os.path.join(info, 'intro-targets.json')) as f:
            targets = json.load(f)
    except OSError as e:
        print(f'suite-targets.py: {e}: configure {argv[1]} with meson first', file=sys.stderr)
        return 1
    files = {t['id']: t['filename'] for t in targets}
    out = set()
    for t in tests:
        # suites are "project:suite"
        if any(s.split(':')[-1] in skip for s in t['suite']):
            continue
        for dep in t['depends']:
            out.update(os.path.relpath(f, build) for f in files.get(dep, []))
    # the fast CPU backend module: the engine opens it at run time, so no test's link
    # names it, and every test that runs the CPU backend needs it
    for t in targets:
        if t['name'] == 'gpunet-cpu':
            out.update(os.path.relpath(f, build) for f in t['filename'])
    print('\n'.join(sorted(out)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
