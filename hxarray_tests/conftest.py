"""Shared test settings: hypothesis profiles sized for a 2-core CI machine, and the device fixture
that runs the chapter tests (the modules that declare `pytestmark = ON_EACH_DEVICE`) once per
usable device: the CPU, the in-repo plug-ins (toy, ref) and CUDA where it can run."""

import os

import pytest
from hypothesis import HealthCheck, settings

import hxarray as xp

settings.register_profile("ci", max_examples=50, deadline=None,
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
