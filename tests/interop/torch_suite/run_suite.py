#!/usr/bin/python3
"""Runs PyTorch's own distributed test suite against one backend.

torch.testing._internal.distributed.distributed_test (installed with python3-torch) is driven
the way torch's test/distributed/test_distributed_spawn.py drives it: one TestCase class that
spawns WORLD_SIZE processes per test, which initialise the backend with a file:// store.

    BACKEND=spmd WORLD_SIZE=3 run_suite.py [--results FILE] [-k PATTERN ...] [TEST_NAME ...]

BACKEND "spmd" imports spmd_torch (PYTHONPATH must reach build/python) and declares the
features torch's suite keys on per backend (DistTestCases.backend_feature: ddp, subgroup,
plugin; profiler events) for it; tests that name other backends (BACKEND == "gloo", require_backend({"gloo"}))
skip as the suite decides.

--impersonate-gloo runs the suite as BACKEND "gloo" — every decision the suite makes by
name (skips, expected behaviour) is gloo's — but each process group torch creates for "gloo"
is spmd_torch.ProcessGroupSpmd: the way to run the gloo-only tests on spmd (profiler event
names, which are spmd's, are not checked). Tests that check gloo's own error texts or class
fail there by construction. shard_py311_fix.py works around a Python 3.11 incompatibility of
torch 1.13 that breaks every DDP test for every backend. --results appends one JSON line per test: name, outcome
(passed/failed/skipped) and the reason or the first line of the error.
"""
import argparse
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # the expecttest stand-in

import shard_py311_fix  # noqa: E402

shard_py311_fix.install()  # DDP tests need it under Python 3.11 (see the module)

# In the children too (environment): see --impersonate-gloo.
IMPERSONATE_GLOO = os.environ.get("SPMD_SUITE_IMPERSONATE_GLOO") == "1"
BACKEND = os.environ.get("BACKEND", "")
if BACKEND == "spmd" or IMPERSONATE_GLOO:
    import spmd_torch  # noqa: F401  (registers the backend, also in the spawned children)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", help="append one JSON line per test to this file")
    p.add_argument("-k", dest="patterns", action="append", default=[],
                   help="run tests whose name contains this substring (repeatable)")
    p.add_argument("--list", action="store_true", help="print the test names and exit")
    p.add_argument("--require-pass", action="store_true",
                   help="fail when a test is skipped (for a selection that must run)")
    p.add_argument("--impersonate-gloo", action="store_true",
                   help="run as BACKEND=gloo with every gloo process group made by spmd (see above)")
    p.add_argument("tests", nargs="*", help="exact test names (test_...)")
    return p.parse_args()


def prepare_environment():
    for var in ("BACKEND", "WORLD_SIZE"):
        if var not in os.environ:
            sys.exit(f"run_suite.py: set {var} (BACKEND=gloo|spmd, WORLD_SIZE=2|3)")
    if "TEMP_DIR" not in os.environ:
        os.environ["TEMP_DIR"] = tempfile.mkdtemp(prefix="dist_suite_")
    os.environ.setdefault("INIT_METHOD", "env://")
    # torch's MultiProcessTestCase makes a file store per test with NamedTemporaryFile(delete=False)
    # and never removes it: keep those in TEMP_DIR, which the caller removes (also in the children).
    os.environ["TMPDIR"] = os.environ["TEMP_DIR"]
    tempfile.tempdir = os.environ["TEMP_DIR"]
    for sub in ("barrier", "test_dir"):
        os.makedirs(os.path.join(os.environ["TEMP_DIR"], sub), exist_ok=True)


if __name__ == "__main__":  # not in the spawned children, which import this file as __mp_main__
    ARGS = parse_args()
    if ARGS.impersonate_gloo:
        os.environ["BACKEND"] = BACKEND = "gloo"
        os.environ["SPMD_SUITE_IMPERSONATE_GLOO"] = "1"
        IMPERSONATE_GLOO = True
        import spmd_torch  # noqa: F401
    prepare_environment()
    sys.argv = sys.argv[:1]  # torch's test utilities parse sys.argv when imported (here and in children)

# The suite reads its per-backend feature sets when it is imported: declare spmd's first.
from torch.testing._internal.common_distributed import DistTestCases  # noqa: E402

if BACKEND == "spmd":
    for feature in ("ddp", "subgroup", "plugin"):
        DistTestCases.backend_feature[feature].add("spmd")

from torch.testing._internal.distributed import distributed_test  # noqa: E402
from torch.testing._internal.distributed.distributed_test import DistributedTest, TestDistBackend  # noqa: E402

if BACKEND == "spmd":
    # spmd's works record profiler events named as the suite expects ("spmd:all_reduce", ...):
    # let the tests check them, as they do for gloo. (Read when the tests run.)
    distributed_test.PROFILING_SUPPORTED_BACKENDS.append("spmd")
    distributed_test.SEND_RECV_PROFILING_SUPPORTED_BACKENDS.append("spmd")

if IMPERSONATE_GLOO:
    import torch.distributed.distributed_c10d as _c10d

    _real_gloo = _c10d.ProcessGroupGloo
    _c10d.ProcessGroupGloo = spmd_torch.ProcessGroupSpmd  # what init_process_group/new_group build for "gloo"

    # Under TORCH_DISTRIBUTED_DEBUG=DETAIL torch wraps a gloo group in a _ProcessGroupWrapper
    # whose helper (checking that ranks call the same collectives) must be a real gloo group.
    def _create_process_group_wrapper(wrapped_pg, store_prefix, store, rank, world_size,
                                      timeout=_c10d.default_pg_timeout):
        prefix_store = _c10d.PrefixStore(f"{_c10d.PG_WRAPPER_STORE_PREFIX}:{store_prefix}", store)
        helper = _real_gloo(prefix_store, rank, world_size, timeout=timeout)
        return _c10d._ProcessGroupWrapper(wrapped_pg, helper)

    _c10d._create_process_group_wrapper = _create_process_group_wrapper
    # The profiler events are spmd's ("spmd:all_reduce"), not gloo's: do not look for gloo's.
    for backends in (distributed_test.PROFILING_SUPPORTED_BACKENDS, distributed_test.SEND_RECV_PROFILING_SUPPORTED_BACKENDS):
        backends.remove("gloo")


class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        self._spawn_processes()


class RecordingResult(unittest.TextTestResult):
    """Writes every test's outcome as a JSON line, as soon as it is known."""

    path = None

    def _record(self, test, outcome, detail=""):
        if not self.path:
            return
        line = {"test": test.id().split(".")[-1], "outcome": outcome, "detail": detail.strip()[-3000:]}
        with open(self.path, "a") as f:
            f.write(json.dumps(line) + "\n")

    def addSuccess(self, test):
        super().addSuccess(test)
        self._record(test, "passed")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._record(test, "skipped", reason)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._record(test, "failed", self._exc_info_to_string(err, test))

    def addError(self, test, err):
        super().addError(test, err)
        self._record(test, "failed", self._exc_info_to_string(err, test))

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._record(test, "passed", "expected failure")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._record(test, "failed", "unexpected success")


def main(args):
    cls = TestDistBackendWithSpawn
    names = unittest.TestLoader().getTestCaseNames(cls)
    if args.tests:
        unknown = sorted(set(args.tests) - set(names))
        if unknown:
            sys.exit(f"run_suite.py: no such test(s): {', '.join(unknown)}")
        names = [n for n in names if n in args.tests]
    if args.patterns:
        names = [n for n in names if any(p in n for p in args.patterns)]
    if args.list:
        print("\n".join(names))
        return 0
    RecordingResult.path = args.results
    suite = unittest.TestSuite(cls(n) for n in names)
    result = unittest.TextTestRunner(verbosity=2, resultclass=RecordingResult).run(suite)
    if args.require_pass and result.skipped:
        print("run_suite.py: --require-pass, but skipped: " + ", ".join(t.id().split(".")[-1] for t, _ in result.skipped))
        return 1
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(ARGS))
