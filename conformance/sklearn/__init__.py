"""scikit-learn's own array-API tests with hxarray added to the namespaces they test."""
