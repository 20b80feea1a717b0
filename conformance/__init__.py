"""Runner for the array-api-tests conformance suite against hxarray (``python -m conformance``)."""
