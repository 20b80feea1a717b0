"""SciPy's own array-API tests with hxarray added to the backends they test."""
