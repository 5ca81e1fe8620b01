"""Statistical audits of differential privacy claims (Ding et al. 2018; Jagielski et al. 2020).

An audit runs a mechanism many times on a pair of neighbouring datasets and looks for an
event whose probabilities under the two datasets differ by more than the claim allows.
A failed audit is (up to probability ``alpha``) proof of a violation; a passed audit
proves nothing. See ``docs/audit.md``.
"""

from __future__ import annotations

from dpsense.audit.catastrophe import CatastropheResult, catastrophe_test
from dpsense.audit.histogram import AuditResult, Sampler, clopper_pearson, histogram_audit

__all__ = [
    "AuditResult",
    "CatastropheResult",
    "Sampler",
    "catastrophe_test",
    "clopper_pearson",
    "histogram_audit",
]
