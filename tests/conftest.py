"""Shared test configuration: deterministic hypothesis profiles."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile(
    "dpsense",
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.load_profile("dpsense")
