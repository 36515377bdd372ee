"""Build the era table of a self-controlled case series (SCCS) from person-level data.

Inputs (pandas DataFrames):

- ``observation``: one observation period per person: person, start, end (and a
  birth date when splitting by age);
- ``exposures``: person, drug, start, end of each exposure era;
- ``outcomes``: person, date of each outcome event.

Every person with at least one outcome inside their observation period is a *case*;
the others drop out (they carry no information in SCCS). Each case's observation
period is cut at every change of exposure status (risk-window starts and ends of
every drug) and, optionally, at age and calendar cut-points, giving eras of
constant covariates (neighbouring eras with equal covariates are merged). Era r gets its length, its event
count and indicator covariates (1 if the era lies in a risk window of the drug; age / calendar group
indicators, first group the reference).

Time convention: intervals are half-open ``[start, end)`` on any numeric time axis
(days, say); an event at time d belongs to the era with start <= d < end. With
``inclusive_end=True`` (integer days, end day included, as OMOP eras) every end
(observation, exposure, risk window) is moved one day later first.

The risk window of an exposure is ``[start + risk_window_start, anchor +
risk_window_end)`` with anchor the exposure end (``risk_window_anchor='end'``) or
start. Windows reaching outside the observation period are clipped to it (a
DataWarning gives the count); overlapping windows of one drug merge. Anchored on the
end, a window exists for the exposures longer than ``risk_window_start -
risk_window_end``; the others are left out, with a DataWarning (every window empty,
or anchored on the start with an end not after the start, raises).

Everything is vectorized: one sort of all change-points, ``searchsorted`` to place
windows and events into eras, ``np.repeat`` to expand windows over the eras they
cover. No Python loop runs over persons or rows.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import scipy.sparse as sp

from riskset.data.dataset import Dataset
from riskset.data.sccs_time import age_knots_at, month_cuts, season_knots_at, time_effect_columns
from riskset.exceptions import DataWarning, InputError
from riskset.validation import finite_number, finite_numbers, one_of, positive_number


def _col(df, name, what):
    if name not in df.columns:
        raise InputError(f"the {what} table has no column {name!r} (columns: {', '.join(map(str, df.columns))})")
    return df[name]


def _times(df, name, what):
    s = _col(df, name, what)
    if not pd.api.types.is_datetime64_any_dtype(s) and not pd.api.types.is_numeric_dtype(s) and len(s) \
            and pd.to_numeric(s, errors="coerce").isna().all():
        s = pd.to_datetime(s, errors="coerce", format="ISO8601")  # dates written as text (a CSV file)
    if pd.api.types.is_datetime64_any_dtype(s):
        # days since 1970-01-01
        v = s.to_numpy("datetime64[ns]").astype(np.int64) / 86_400e9
        v[s.isna().to_numpy()] = np.nan
    else:
        v = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(v)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"column {name!r} of the {what} table has {int(bad.sum())} missing or non-numeric "
                         f"value(s), first at row {df.index[i]!r}")
    return v


def build_sccs(observation: pd.DataFrame, exposures: pd.DataFrame, outcomes: pd.DataFrame, *,
               person: str = "person_id", start: str = "start", end: str = "end", drug: str = "drug",
               date: str = "date", birth: str = "birth", risk_window_start: float = 0.0,
               risk_window_end: float = 0.0, risk_window_anchor: str = "end", pre_exposure: float | None = None,
               inclusive_end: bool = False, age_knots=None, season_knots=None, age_cuts=None,
               calendar_cuts=None) -> Dataset:
    """SCCS era table as a :class:`Dataset` (strata = case, y = events, offset = log length).

    Parameters
    ----------
    observation, exposures, outcomes : DataFrames (see the module docstring).
    person, start, end, drug, date, birth : column names (``start``/``end`` are used
        in both the observation and the exposure table).
    risk_window_start, risk_window_end, risk_window_anchor : the risk window.
    pre_exposure : length of a pre-exposure window ``[exposure start - pre_exposure, exposure
        start)``, one covariate ``"<drug> pre-exposure"`` per drug: the rate just before an
        exposure, kept out of the reference time (it is often lowered by contra-indication
        or raised by the outcome prompting the treatment; SelfControlledCaseSeries' pre-exposure
        era covariate).
    inclusive_end : ends are inclusive integer days.
    age_knots, season_knots : age and season as smooth effects (splines), cutting every case's
        observation at each calendar month (see :mod:`riskset.data.sccs_time`): a number of knots
        (SelfControlledCaseSeries' default is 5 each; age knots at quantiles of the ages at the
        outcomes, season knots evenly over the year) or the knots themselves (ages in the time
        unit since ``birth``; months on the scale 0.5 .. 12.5). Times are then days since
        1970-01-01 (dates are converted to them). Columns ``age_spline_k``, ``season_spline_k``;
        ``meta['time_effects']`` keeps the knots.
    age_cuts : ages (time since ``birth``, same unit as the dates) where new age groups
        start; covariates ``age[a,b)`` (the group before the first cut is the reference).
    calendar_cuts : calendar times where new periods start; covariates ``calendar[a,b)``.

    Returns
    -------
    Dataset with one row per era, sorted by case and start; ``meta['eras']`` is the
    era table (person, start, end, length, events) and ``meta['sccs']`` counts what
    was dropped or clipped.

    Examples
    --------
    >>> import pandas as pd
    >>> obs = pd.DataFrame({"person_id": [1, 2], "start": [0, 0], "end": [100, 100]})
    >>> exp = pd.DataFrame({"person_id": [1], "drug": ["a"], "start": [10], "end": [30]})
    >>> out = pd.DataFrame({"person_id": [1, 1], "date": [15, 50]})
    >>> ds = build_sccs(obs, exp, out)
    >>> ds.meta["eras"][["start", "end", "length", "events"]].values.tolist()
    [[0.0, 10.0, 10.0, 0.0], [10.0, 30.0, 20.0, 1.0], [30.0, 100.0, 70.0, 1.0]]
    >>> ds.X.toarray().ravel().tolist()
    [0.0, 1.0, 0.0]
    """
    shift = 1.0 if inclusive_end else 0.0
    _check_risk_window(risk_window_start, risk_window_end, risk_window_anchor, shift)
    counts = {}

    # -- observation periods ----------------------------------------------------------
    obs_person = _col(observation, person, "observation").to_numpy()
    os_ = _times(observation, start, "observation")
    oe_ = _times(observation, end, "observation") + shift
    if pd.Index(obs_person).has_duplicates:
        dup = pd.Index(obs_person)[pd.Index(obs_person).duplicated()][0]
        raise InputError(f"person {dup!r} has more than one observation period; give one period per person")
    bad = oe_ <= os_
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{int(bad.sum())} observation period(s) of zero or negative length, first for person "
                         f"{obs_person[i]!r}: [{os_[i]:g}, {oe_[i] - shift:g}]")

    # -- outcomes: which persons are cases ---------------------------------------------
    obs_index = pd.Index(obs_person)
    o_idx = obs_index.get_indexer(_col(outcomes, person, "outcomes").to_numpy())
    o_time = _times(outcomes, date, "outcomes")
    known = o_idx >= 0
    safe = np.where(known, o_idx, 0)
    inside = known & (o_time >= os_[safe]) & (o_time < oe_[safe])
    n_out = int((~inside).sum())
    if n_out:
        warnings.warn(f"sccs: dropped {n_out} outcome event(s) outside every observation period "
                      f"({int((~known).sum())} of persons without one)", DataWarning, stacklevel=2)
    counts["outcomes_dropped_outside"] = n_out
    case_obs = np.unique(o_idx[inside])  # observation rows of the cases, in table order
    if case_obs.size == 0:
        raise InputError("sccs: no outcome event falls inside an observation period: there are no cases")
    counts["persons"] = len(obs_person)
    counts["cases"] = int(case_obs.size)
    counts["non_cases_dropped"] = len(obs_person) - int(case_obs.size)
    n_cases = case_obs.size
    c_start, c_end = os_[case_obs], oe_[case_obs]
    remap = np.full(len(obs_person), -1, dtype=np.int64)
    remap[case_obs] = np.arange(n_cases)
    ev_case = remap[o_idx[inside]]
    ev_time = o_time[inside]

    # -- exposure risk windows, clipped to the observation period -----------------------
    e_start = _times(exposures, start, "exposures")
    e_end_raw = _times(exposures, end, "exposures")
    bad = e_end_raw < e_start
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{int(bad.sum())} exposure era(s) end before they start, first at row "
                         f"{exposures.index[i]!r}: start {e_start[i]:g}, end {e_end_raw[i]:g}")
    e_obs = obs_index.get_indexer(_col(exposures, person, "exposures").to_numpy())
    e_case = np.where(e_obs >= 0, remap[np.maximum(e_obs, 0)], -1)
    anchor = e_end_raw if risk_window_anchor == "end" else e_start
    ws = e_start + risk_window_start
    we = anchor + risk_window_end + shift
    drugs_all = _col(exposures, drug, "exposures").to_numpy()
    if e_start.size and not np.any(we > ws):
        raise InputError(f"every risk window is empty: [exposure start + {risk_window_start:g}, exposure "
                         f"{risk_window_anchor} + {risk_window_end:g}) ends before it starts for every exposure; "
                         f"check risk_window_start, risk_window_end and risk_window_anchor")
    empty = we <= ws
    if empty.any():
        i = int(np.flatnonzero(empty)[0])
        warnings.warn(f"sccs: {int(empty.sum())} of {empty.size} exposure(s) have an empty risk window [exposure "
                      f"start + {risk_window_start:g}, exposure {risk_window_anchor} + {risk_window_end:g}) and are "
                      f"left out: they last {risk_window_start - risk_window_end - shift:g} or less (first at row "
                      f"{exposures.index[i]!r}: start {e_start[i]:g}, end {e_end_raw[i]:g})", DataWarning,
                      stacklevel=2)
    window_names = drugs_all.astype(str)
    if pre_exposure is not None:  # [start - pre_exposure, start): no shift, the exposure's first day is not in it
        length = positive_number("pre_exposure", pre_exposure)
        e_case, empty = np.r_[e_case, e_case], np.r_[empty, np.zeros(e_start.size, bool)]
        ws, we = np.r_[ws, e_start - length], np.r_[we, e_start]
        window_names = np.r_[window_names, np.char.add(window_names, " pre-exposure")]
    sel = (e_case >= 0) & ~empty
    e_case, ws, we, window_names = e_case[sel], ws[sel], we[sel], window_names[sel]
    lo, hi = c_start[e_case], c_end[e_case]
    cs, ce = np.maximum(ws, lo), np.minimum(we, hi)
    outside = ce <= cs
    clipped = ~outside & ((cs != ws) | (ce != we))
    if outside.any() or clipped.any():
        warnings.warn(f"sccs: clipped {int(clipped.sum())} exposure window(s) to the observation period "
                      f"and dropped {int(outside.sum())} lying wholly outside it", DataWarning, stacklevel=2)
    counts["windows_clipped"] = int(clipped.sum())
    counts["windows_dropped_outside"] = int(outside.sum())
    keep = ~outside
    e_case, cs, ce = e_case[keep], cs[keep], ce[keep]
    drug_codes, drug_names = pd.factorize(pd.Series(window_names[keep]), sort=True)

    # -- age and calendar cut-points ----------------------------------------------------
    split_case, split_time = [], []
    age_cuts = np.sort(finite_numbers("age_cuts", age_cuts)) if age_cuts is not None else None
    cal_cuts = np.sort(finite_numbers("calendar_cuts", calendar_cuts)) if calendar_cuts is not None else None
    birth_days = _times(observation, birth, "observation")[case_obs] \
        if age_cuts is not None or age_knots is not None else None
    if age_cuts is not None:
        t = (birth_days[:, None] + age_cuts[None, :]).ravel()
        split_case.append(np.repeat(np.arange(n_cases), age_cuts.size))
        split_time.append(t)
    if cal_cuts is not None:
        split_case.append(np.repeat(np.arange(n_cases), cal_cuts.size))
        split_time.append(np.tile(cal_cuts, n_cases))
    if age_knots is not None:
        age_knots = age_knots_at(ev_time - birth_days[ev_case], age_knots)
    season_knots = season_knots_at(season_knots) if season_knots is not None else None
    if age_knots is not None or season_knots is not None:
        case, day = month_cuts(c_start, c_end)
        split_case.append(case)
        split_time.append(day)
    if split_case:
        sc, st = np.concatenate(split_case), np.concatenate(split_time)
        inner = (st > c_start[sc]) & (st < c_end[sc])
        sc, st = sc[inner], st[inner]
    else:
        sc, st = np.empty(0, np.int64), np.empty(0)

    # -- eras: sorted unique change-points per case ----------------------------------------
    pc = np.concatenate([np.arange(n_cases), np.arange(n_cases), e_case, e_case, sc])
    pt = np.concatenate([c_start, c_end, cs, ce, st])
    order = np.lexsort((pt, pc))
    pc, pt = pc[order], pt[order]
    first = np.ones(pc.size, bool)
    first[1:] = (pc[1:] != pc[:-1]) | (pt[1:] != pt[:-1])
    pc, pt = pc[first], pt[first]
    is_era = np.zeros(pc.size, bool)
    is_era[:-1] = pc[:-1] == pc[1:]
    era_case = pc[is_era]
    era_start = pt[is_era]
    era_end = pt[np.flatnonzero(is_era) + 1]
    n_eras = era_case.size
    # exact integer keys: (case, rank of the time among all change-points)
    utimes = np.unique(pt)
    U = np.int64(utimes.size + 1)

    def key(case, t, side):
        rank = np.searchsorted(utimes, t, side=side)
        return case.astype(np.int64) * U + rank

    era_key = key(era_case, era_start, "left")

    # windows -> covered eras
    e0 = np.searchsorted(era_key, key(e_case, cs, "left"), side="left")
    e1 = np.searchsorted(era_key, key(e_case, ce, "left"), side="left")
    span = e1 - e0
    total = int(span.sum())
    rep_start = np.repeat(e0, span)
    offs = np.arange(total) - np.repeat(np.cumsum(span) - span, span)
    rows = rep_start + offs
    cols = np.repeat(drug_codes, span)
    Xd = sp.csr_matrix((np.ones(total), (rows, cols)), shape=(n_eras, len(drug_names)))
    Xd.sum_duplicates()
    Xd.data[:] = 1.0  # overlapping windows of one drug: still exposed (indicator)
    blocks, names = [Xd], [str(d) for d in drug_names]

    # events -> era (largest era start <= event time, within the case)
    ev_era = np.searchsorted(era_key, key(ev_case, ev_time, "right") - 1, side="right") - 1
    events = np.bincount(ev_era, minlength=n_eras).astype(np.float64)

    def group_columns(g, cuts, label):
        present = np.unique(g[g > 0])
        if present.size == 0:
            return
        edges = np.concatenate([[-np.inf], cuts, [np.inf]])
        colmap = np.full(cuts.size + 1, -1)
        colmap[present] = np.arange(present.size)
        r = np.flatnonzero(g > 0)
        blocks.append(sp.csr_matrix((np.ones(r.size), (r, colmap[g[r]])), shape=(n_eras, present.size)))
        names.extend(f"{label}[{edges[k]:g},{edges[k + 1]:g})" for k in present)

    if age_cuts is not None:
        group_columns(np.searchsorted(age_cuts, era_start - birth_days[era_case], side="right"), age_cuts, "age")
    if cal_cuts is not None:
        group_columns(np.searchsorted(cal_cuts, era_start, side="right"), cal_cuts, "calendar")
    spline_blocks, time_effects = time_effect_columns(era_case, era_start, c_start, birth_days, age_knots,
                                                      season_knots)
    blocks += spline_blocks
    names += list(time_effects.age_columns + time_effects.season_columns)

    X = sp.hstack(blocks, format="csr") if len(blocks) > 1 else Xd
    # merge neighbouring eras of one case with identical covariates (e.g. where two
    # overlapping windows of one drug meet): two random projections identify equal rows
    proj = X @ np.random.default_rng(0).random((X.shape[1], 2)) if X.shape[1] else np.zeros((n_eras, 2))
    new = np.ones(n_eras, bool)
    new[1:] = (era_case[1:] != era_case[:-1]) | np.any(proj[1:] != proj[:-1], axis=1)
    if not new.all():
        group = np.cumsum(new) - 1
        heads = np.flatnonzero(new)
        tails = np.append(heads[1:], n_eras) - 1
        X = X[heads]
        events = np.bincount(group, weights=events)
        era_case, era_start, era_end = era_case[heads], era_start[heads], era_end[tails]
        n_eras = heads.size
    X = X.tocsc()
    length = era_end - era_start
    labels = obs_person[case_obs]
    eras = pd.DataFrame({"person": labels[era_case], "start": era_start, "end": era_end, "length": length,
                         "events": events})
    counts["eras"] = int(n_eras)
    counts["events"] = float(events.sum())
    return Dataset(X=X, covariate_names=names, row_ids=np.arange(n_eras), y=events, offset=np.log(length),
                   strata=era_case, strata_labels=labels,
                   meta={"eras": eras, "sccs": counts, "time_effects": time_effects,
                         "roles": {"strata": f"{person} (case)",
                                                                 "offset": "log(era length)"}})


def _check_risk_window(start, end, anchor, shift):
    """The risk window [exposure start + start, anchor + end + shift): finite offsets, and an
    end after the start when both count from the exposure start (``shift`` 1 for inclusive
    ends: a window of one day then starts and ends on that day). Anchored on the exposure
    end, an end offset below the start offset is a window that exists for exposures longer
    than their difference (those shorter are left out, with a warning)."""
    one_of("risk_window_anchor", anchor, ("start", "end"))
    start, end = finite_number("risk_window_start", start), finite_number("risk_window_end", end)
    if anchor == "start" and end + shift <= start:
        relation = "is before" if shift else "is not after"
        raise InputError(f"risk_window_end ({end:g}) {relation} risk_window_start ({start:g}) with "
                         f"risk_window_anchor='start': every risk window [exposure start + {start:g}, exposure "
                         f"start + {end:g}{' + 1' if shift else ''}) would be empty")


def eras_dataset(frame: pd.DataFrame, *, person: str = "person_id", length: str = "length",
                 events: str = "events", covariates=None) -> Dataset:
    """SCCS Dataset from an existing era table (one row per era), with its checks.

    Zero or negative era lengths and negative event counts raise InputError; cases
    without any event are dropped by the model.
    """
    L = _times(frame, length, "era")
    bad = L <= 0
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{int(bad.sum())} era(s) of zero or negative length in column {length!r}, first at "
                         f"row {frame.index[i]!r} (length {L[i]:g}); every era needs a positive length")
    y = _times(frame, events, "era")
    bad = y < 0
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{int(bad.sum())} negative event count(s) in column {events!r}, first at row "
                         f"{frame.index[i]!r} ({y[i]:g})")
    covariates = list(covariates) if covariates is not None else [
        c for c in frame.columns if c not in (person, length, events)]
    X = sp.csc_matrix(np.column_stack([_times(frame, c, "era") for c in covariates]) if covariates
                      else np.zeros((len(frame), 0)))
    codes, labels = pd.factorize(_col(frame, person, "era"))
    return Dataset(X=X, covariate_names=[str(c) for c in covariates], row_ids=np.asarray(frame.index),
                   y=y, offset=np.log(L), strata=codes.astype(np.int64), strata_labels=np.asarray(labels),
                   meta={"roles": {"strata": str(person), "offset": f"log({length})"}})


__all__ = ["build_sccs", "eras_dataset"]
