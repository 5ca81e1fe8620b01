"""Statistical audits of differential privacy claims (Ding et al. 2018; Jagielski et al. 2020).

An audit runs a mechanism many times on a pair of neighbouring datasets and looks for an
event whose probabilities under the two datasets differ by more than the claim allows.
A failed audit is (up to probability ``alpha``) proof of a violation; a passed audit
proves nothing. :func:`audit_mechanism` runs both tests on a callable from a dataset to
a number (``dpsense audit`` on the command line). See ``docs/audit.md``.
"""

from __future__ import annotations

from dpsense.audit.catastrophe import CatastropheResult, catastrophe_test
from dpsense.audit.histogram import AuditResult, Sampler, clopper_pearson, histogram_audit
from dpsense.audit.mechanism import MechanismAudit, audit_mechanism, neighbour_relation

__all__ = [
    "AuditResult",
    "CatastropheResult",
    "MechanismAudit",
    "Sampler",
    "audit_mechanism",
    "catastrophe_test",
    "clopper_pearson",
    "histogram_audit",
    "neighbour_relation",
]
