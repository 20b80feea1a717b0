"""Shared test settings: hypothesis profiles sized for a 2-core CI machine, and the mode fixture."""

import os

# scipy's array-API support (which scikit-learn's dispatch needs) is read when scipy is imported:
# set it before any test module can import scipy.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

import pytest
from hypothesis import HealthCheck, settings

import hxarray

settings.register_profile("ci", max_examples=50, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=500, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def _mode(request: pytest.FixtureRequest):
    """Tests marked `strict` run in strict mode (the standard's behaviour where it is silent);
    the rest run in the default numpy mode."""
    if request.node.get_closest_marker("strict") is None:
        yield
        return
    with hxarray.set_strict(True):
        yield
