"""The shared validation runs the script tests read, or exit 77 (ctest: skipped) without them."""
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def modern_runs_or_skip():
    """Path of ../shared/validation/modern_runs.json beside the checkout; exits 77 when it is missing."""
    runs = os.path.join(ROOT, "..", "shared", "validation", "modern_runs.json")
    if not os.path.isfile(runs):
        print(f"skipped: {runs} is missing")
        sys.exit(77)
    return runs
