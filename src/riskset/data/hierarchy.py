"""Covariate groups of a hierarchical normal prior as extra design columns.

The prior beta_j ~ N(mu_g, v), mu_g ~ N(0, v_g) for the covariates j of group g is, writing
beta_j = mu_g + delta_j, independent normal priors delta_j ~ N(0, v) and mu_g ~ N(0, v_g) on
the design [X, X A] (A: covariate -> group indicators; the column of group g is the sum of its
covariates' columns): one ridge fit with per-coefficient variances, exact (the same maximum
as the marginal prior N(0, v I + v_g 1 1') on each group's coefficients), no alternation.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from riskset.exceptions import InputError

#: Name of a group's column in the augmented design: ``group:<label>``.
GROUP_PREFIX = "group:"


@dataclass(frozen=True)
class GroupedDesign:
    """The data with a column per group (:func:`with_group_columns`), the groups' column
    names, and ``members`` (covariates x groups, 1 where a covariate is in a group)."""

    data: object
    group_names: list
    members: sp.csc_matrix


def with_group_columns(data, groups: dict) -> GroupedDesign:
    """``data`` with one column per group of ``groups`` (covariate name -> group label)."""
    names = list(data.covariate_names)
    unknown = [n for n in groups if n not in names]
    if unknown:
        raise InputError(f"groups names covariate(s) the data do not have: {', '.join(map(repr, unknown[:5]))}")
    labels = sorted({str(g) for g in groups.values()})
    group_names = [f"{GROUP_PREFIX}{g}" for g in labels]
    clash = [g for g in group_names if g in names]
    if clash:
        raise InputError(f"the data have a covariate named like a group's column: {clash[0]!r}")
    at = {g: k for k, g in enumerate(labels)}
    rows = np.array([names.index(n) for n in groups], dtype=np.int64)
    cols = np.array([at[str(g)] for g in groups.values()], dtype=np.int64)
    members = sp.csc_matrix((np.ones(rows.size), (rows, cols)), shape=(len(names), len(labels)))
    X = sp.csc_matrix(sp.hstack([data.X, data.X @ members], format="csc"))
    return GroupedDesign(replace(data, X=X, covariate_names=names + group_names), group_names, members)
