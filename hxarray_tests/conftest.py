"""Shared test settings: hypothesis profiles sized for a 2-core CI machine."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=50, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=500, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
