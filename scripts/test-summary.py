#!/usr/bin/env python3
"""test-summary.py LOG_OR_BUILD_DIR...: one line over meson's test logs (a testlog*.json
file, or a build directory for its meson-logs/testlog.json), skips counted apart:
"N passed, S skipped, F failed" (CI reads the passed and failed counts of the last
line), after a FAILED line per failed test. Exit 1 when a test failed or a log is
missing."""
import json
import os
import sys


def main(dirs):
    passed = skipped = failed = 0
    for d in dirs:
        path = f"{d}/meson-logs/testlog.json" if os.path.isdir(d) else d
        try:
            f = open(path)
        except OSError as e:
            print(f"FAILED: {d}: no test log ({e.strerror})")
            failed += 1
            continue
        with f:
            for line in f:
                r = json.loads(line)
                if r["result"] in ("OK", "EXPECTEDFAIL"):
                    passed += 1
                elif r["result"] == "SKIP":
                    skipped += 1
                else:
                    failed += 1
                    print(f"FAILED: {d}: {r['name']} ({r['result']})")
    print(f"{passed} passed, {skipped} skipped, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
