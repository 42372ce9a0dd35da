"""Runs the Python package's tests and prints the closing line ctest reads:

    fprof python tests: N passed, F failed, S skipped

It exits non-zero when a test failed or errored, and also when no test ran at all (pytest's exit 5
would otherwise read as a pass to a script that only checks for failures).
usage: run_tests.py --fprof FPROF_BINARY --data TESTS_DATA_DIR [pytest arguments]
"""

import os
import sys

import pytest


class Outcomes:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0

    def pytest_runtest_logreport(self, report):
        if report.when == "call" and report.passed:
            self.passed += 1
        elif report.failed:
            self.failed += 1
        elif report.skipped:
            self.skipped += 1


def main() -> int:
    outcomes = Outcomes()
    here = os.path.dirname(os.path.abspath(__file__))
    code = pytest.main([here, "-p", "no:cacheprovider", "-q", *sys.argv[1:]], plugins=[outcomes])
    print(f"fprof python tests: {outcomes.passed} passed, {outcomes.failed} failed, {outcomes.skipped} skipped")
    if outcomes.passed == 0:
        print("fprof python tests: no test ran", file=sys.stderr)
        return 1
    return 0 if code == 0 and outcomes.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
