"""TAP for the tests that need no root (tests/docs, tests/oci): each test
returns (ok, detail), ok being True, False or "skip" (detail its reason);
an exception fails its test only, its text as the detail."""


def registry():
    """([(name, fn)], test): @test(name) registers fn."""
    tests = []

    def test(name):
        def register(fn):
            tests.append((name, fn))
            return fn
        return register
    return tests, test


def run(tests):
    """Print TAP for tests; 1 if any failed, else 0."""
    print("1..%d" % len(tests))
    failed = False
    for n, (name, fn) in enumerate(tests, 1):
        try:
            ok, detail = fn()
        except Exception as e:  # a crash of one test fails that one
            ok, detail = False, "%s: %s" % (type(e).__name__, e)
        if ok == "skip":
            print("ok %d - %s # SKIP %s" % (n, name, detail))
        elif ok:
            print("ok %d - %s" % (n, name))
        else:
            failed = True
            print("not ok %d - %s" % (n, name))
            print("# %s" % (detail,))
    return 1 if failed else 0
