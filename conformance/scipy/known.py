"""SciPy's array-API tests that fail with hxarray through no fault of hxarray's: patterns over
pytest node ids (`*` matches anything), each with the reason (a test that hard-codes libraries it
knows, uses API only numpy has, or expects another library's message). Every failure matched
here is counted as the test's; every other one as hxarray's."""

_FLOAT16 = ("numpy-only API: the test asks the namespace for float16, which the standard does "
            "not have (SciPy's capabilities table skips array-api-strict by name)")

_OFF_DEFAULT_DEVICE = (
    "a hard-coded library list: with the `devices` fixture the test runs SciPy functions on every "
    "device of the namespace (hxarray's ref:0 and toy:0 too) where they compute special functions "
    "on the default device; the test skips array-api-strict and PyTorch by name for it, and "
    "`cpu_only` is decided per library, not per device")
_WORDING = ("message wording: the expected-error pattern lists other libraries' messages; "
            "hxarray raises the same exception class with its own")

KNOWN: dict[str, str] = {
    # scipy._lib
    "*test__util.py::TestContainsNaN::test_array_api_lazy[hxarray]":
        "a hard-coded library list: the test skips the eager libraries it knows by name and "
        "expects every other one to be lazy (hxarray is eager)",
    # scipy.differentiate
    "*test_differentiate.py::TestDerivative::test_initial_step[hxarray]":
        "numpy-only API: the test calls xp.logspace, which the standard does not have",
    # scipy.interpolate
    "*test_rbfinterp.py::TestRBFInterpolatorNeighborsNone::*[hxarray*":
        "numpy-only API: RBFInterpolator calls d.view(float) (SciPy's comment: 'not Array API "
        "compliant'); its capabilities table skips array-api-strict by name",
    # scipy.ndimage
    "*test_filters.py::test_gaussian_filter_float16[hxarray]": _FLOAT16,
    "*test_filters.py::TestVectorizedFilter::test_input_validation[hxarray]": _WORDING,
    # scipy.stats
    "*test_device_dtype.py::test_entropy[hxarray-*": _OFF_DEFAULT_DEVICE,
    "*test_device_dtype.py::test_quantile[hxarray-*-harrell-davis]": _OFF_DEFAULT_DEVICE,
    "*test_device_dtype.py::test_hypothesis_tests[hxarray-*": _OFF_DEFAULT_DEVICE,
    "*test_device_dtype.py::test_combine_pvalues[hxarray-*": _OFF_DEFAULT_DEVICE,
    "*test_correlation.py::TestChatterjeeXi::test_input_validation[hxarray]": _WORDING,
    "*test_correlation.py::TestSpearmanRho::test_input_validation[hxarray]": _WORDING,
    # scipy.optimize
    "*test_bracket.py::TestBracketMinimum::test_dtypes[hxarray-*-float16-*": _FLOAT16,
    "*test_bracket.py::TestBracketRoot::test_dtype[hxarray-float16*": _FLOAT16,
    "*test_chandrupatla.py::TestChandrupatlaMinimize::test_dtype[hxarray-float16*": _FLOAT16,
}
