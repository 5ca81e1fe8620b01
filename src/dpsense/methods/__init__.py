"""Release methods: the frameworks that use sensitivity safely."""

from __future__ import annotations

from dpsense.methods._release import Release

__all__ = ["Release"]
