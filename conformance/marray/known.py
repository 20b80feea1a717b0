"""marray's tests that fail with hxarray through no fault of hxarray's: patterns over pytest
node ids (`*` matches anything), each with the reason. Every failure matched here is counted as
the test's; every other one as hxarray's."""

_WORDING = ("hxarray raises TypeError, as numpy does, with its own message; marray's expected "
            "errors list numpy's, array-api-strict's, PyTorch's, CuPy's and JAX's wording only")
_FLOAT16 = ("numpy gives float16, which hxarray does not have: float32 (docs/modes.md); the test "
            "compares dtypes strictly")

KNOWN: dict[str, str] = {
    # complex input where neither numpy nor the standard defines the function
    **{f"*::test_elementwise_unary[hxarray-complex*-{f}]": _WORDING
       for f in ("ceil", "floor", "trunc", "signbit")},
    **{f"*::test_elementwise_binary[hxarray-complex*-{f}]": _WORDING
       for f in ("atan2", "copysign", "hypot", "logaddexp", "nextafter", "floor_divide",
                 "remainder")},
    **{f"*::test_{kind}arithmetic_binary[*hxarray-complex*-{op}-*]": _WORDING
       for kind in ("", "r") for op in ("x // y", "x % y", "x.__floordiv__(y)", "x.__mod__(y)")},
    # bool input numpy refuses too (its "- operator ... not supported for booleans")
    **{f"*::test_elementwise_unary[hxarray-bool-{f}]": _WORDING
       for f in ("negative", "positive", "sign")},
    "*::test_elementwise_binary[hxarray-bool-subtract]": _WORDING,
    "*::test_rarithmetic_binary[*-hxarray-bool-x - y-*]": _WORDING,
    # complex to real: the standard does not permit discarding the imaginary part
    **{f"*::test_astype[hxarray-*-{d}-complex*]": _WORDING.replace("as numpy does", "as the "
       "standard asks (numpy discards the imaginary part)")
       for d in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                 "uint64", "float32", "float64")},
    # floating-point functions of 8-bit integers and bools
    **{f"*::test_elementwise_binary[hxarray-{d}-{f}]": _FLOAT16
       for d in ("bool", "int8", "uint8")
       for f in ("atan2", "copysign", "hypot", "logaddexp", "nextafter")},
}
