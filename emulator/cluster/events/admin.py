"""Operator actions (kind "admin", told apart by `op`): the Cluster's admin calls and
policy_admin.py's isolation policies, failure domains and anti-affinity groups."""

from __future__ import annotations

from typing import Any

from .base import AdminAction

class AdminUnload(AdminAction, kw_only=True):
    op = "unload"
    bundle: str
    destination: str | None


class AdminSplit(AdminAction, kw_only=True):
    op = "split"
    bundle: str
    algorithm: str | None


class IsolationPolicySet(AdminAction, kw_only=True):
    op = "set_isolation_policy"
    policy: str
    data: dict[str, Any]


class IsolationPolicyDeleted(AdminAction, kw_only=True):
    op = "delete_isolation_policy"
    policy: str


class FailureDomainSet(AdminAction, kw_only=True):
    op = "set_failure_domain"
    domain: str
    brokers: list[str]


class FailureDomainDeleted(AdminAction, kw_only=True):
    op = "delete_failure_domain"
    domain: str


class AntiAffinityGroupSet(AdminAction, kw_only=True):
    """`group` None: the namespace left its anti-affinity group."""

    op = "set_anti_affinity_group"
    namespace: str
    group: str | None
