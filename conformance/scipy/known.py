"""SciPy's array-API tests that fail with hxarray through no fault of hxarray's: patterns over
pytest node ids (`*` matches anything), each with the reason (a test that hard-codes libraries it knows, uses API
only numpy has, or expects another library's message). Every failure matched here is counted as
the test's; every other one as hxarray's."""

KNOWN: dict[str, str] = {
}
