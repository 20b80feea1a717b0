"""Shared test settings: hypothesis profiles sized for a 2-core CI machine, the device fixture
that runs the chapter tests (the modules that declare `pytestmark = ON_EACH_DEVICE`) once per
usable device: the CPU, the in-repo plug-ins (toy, ref) and CUDA where it can run, and the mode
fixture (tests marked `strict` run in strict mode)."""

import os

# scipy's array-API support (which scikit-learn's dispatch needs) is read when scipy is imported:
# set it before any test module can import scipy.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

import pytest
from hypothesis import HealthCheck, settings

import hxarray as xp

# "ci" draws the same examples on every run (a test that passed passes again on the same code);
# "thorough" draws ten times as many, new ones each run, to look for what "ci" does not draw.
settings.register_profile("ci", max_examples=50, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=500, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# HXARRAY_TEST_DEVICES=cpu,ref narrows the devices (e.g. to debug one backend).
_chosen = os.environ.get("HXARRAY_TEST_DEVICES", "").split(",")
DEVICES = [d for d in xp.__array_namespace_info__().devices()
           if d.index == 0 and (_chosen == [""] or str(d) in _chosen or d.type.name in _chosen)]


@pytest.fixture(params=DEVICES, ids=str)
def device(request: pytest.FixtureRequest):
    """Each usable device in turn, as the default device of the test."""
    with xp.device_scope(request.param):
        yield request.param


@pytest.fixture
def other_device(device):
    """A usable device other than the test's (the CPU where the test runs elsewhere)."""
    others = [d for d in DEVICES if d is not device]
    if not others:
        pytest.skip("needs a second usable device")
    return others[0]


@pytest.fixture(autouse=True)
def _mode(request: pytest.FixtureRequest):
    """Tests marked `strict` run in strict mode (the standard's behaviour where it is silent);
    the rest run in the default numpy mode."""
    if request.node.get_closest_marker("strict") is None:
        yield
        return
    with xp.set_strict(True):
        yield
