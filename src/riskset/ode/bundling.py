"""Task bundling by a regression-predicted step count.

Adaptive steps make tasks differ in length; on a GPU the threads of a warp
run in lockstep, so a warp takes as long as its longest task. Following the
seed paper, a small random *pilot* subset of the tasks is integrated first;
a linear regression of the pilot's step counts (accepted + rejected) on the
log-parameters predicts the step count of every other task, and the remaining
tasks are launched sorted by that prediction, so neighbouring threads (and
neighbouring CPU chunks) take similar numbers of steps. The pilot results are
kept, so nothing is integrated twice. Results are always returned in the
caller's task order.

Features: every parameter and initial-state column that is not constant; a
column that is positive for all tasks enters as ``log(x)``, otherwise as
``x``; standardised with the pilot's mean and standard deviation. With
``degree=2`` the pairwise products and squares of these features are added
(still linear least squares in the coefficients), and the response is the
step count or its logarithm (heavy-tailed step counts, as in stiff corners
of the TMDD model, are fitted much better on the log scale). With
``degree="auto"`` / ``target="auto"`` the combination with the best R^2 on a
random quarter of the pilot (fitted on the other three quarters) is chosen,
then refitted on the whole pilot.

Diagnostics (:class:`BundleInfo`): predictor R^2 on the held-out (non-pilot)
tasks, and the *lockstep efficiency* ``sum(steps) / sum_b(max_b(steps) *
size_b)`` over consecutive bundles of ``bundle_size`` tasks (a warp is 32):
1 means no idle lanes. It is reported for the caller's order ("unsorted"),
all tasks sorted by prediction ("sorted"), the order actually launched (pilot
first, then sorted), and sorted by the true step counts ("oracle").
"""

from dataclasses import dataclass

import numpy as np


@dataclass
class BundleInfo:
    """Diagnostics of task bundling (see module docstring)."""

    bundle_size: int
    pilot_idx: np.ndarray
    order: np.ndarray          # launch order (task indices)
    predicted: np.ndarray      # predicted steps for every task
    degree: int
    r2_pilot: float            # in-sample R^2 on the pilot
    target: str = "linear"     # regression target: steps or log(steps)
    r2_validation: float = np.nan  # R^2 of the chosen model within pilot
    r2_heldout: float = np.nan  # R^2 on non-pilot tasks (after the run)
    efficiency_unsorted: float = np.nan
    efficiency_sorted: float = np.nan
    efficiency_executed: float = np.nan
    efficiency_oracle: float = np.nan

    def summary(self):
        return (f"bundling: pilot={len(self.pilot_idx)} tasks, degree "
                f"{self.degree}, {self.target} target, R^2 held-out="
                f"{self.r2_heldout:.3f} "
                f"(pilot {self.r2_pilot:.3f}); lockstep efficiency "
                f"(bundle {self.bundle_size}): unsorted "
                f"{self.efficiency_unsorted:.3f}, sorted "
                f"{self.efficiency_sorted:.3f}, launched "
                f"{self.efficiency_executed:.3f}, oracle "
                f"{self.efficiency_oracle:.3f}")

    def as_dict(self):
        return {
            "bundle_size": self.bundle_size,
            "pilot_size": int(len(self.pilot_idx)),
            "degree": self.degree,
            "target": self.target,
            "r2_validation": self.r2_validation,
            "r2_pilot": self.r2_pilot,
            "r2_heldout": self.r2_heldout,
            "efficiency_unsorted": self.efficiency_unsorted,
            "efficiency_sorted": self.efficiency_sorted,
            "efficiency_executed": self.efficiency_executed,
            "efficiency_oracle": self.efficiency_oracle,
        }


def lockstep_efficiency(steps, bundle_size=32):
    """``sum(steps) / sum over bundles of (bundle max * bundle size)``.

    ``steps`` are the per-task step counts in launch order; consecutive
    groups of ``bundle_size`` tasks form a bundle (the last may be smaller).
    """
    s = np.asarray(steps, dtype=float)
    if s.size == 0:
        return np.nan
    b = int(bundle_size)
    if b < 1:
        raise ValueError("bundle_size must be >= 1")
    pad = (-s.size) % b
    sp = np.concatenate([s, np.full(pad, -np.inf)]).reshape(-1, b)
    sizes = np.full(sp.shape[0], b)
    if pad:
        sizes[-1] = b - pad
    denom = float(np.sum(sp.max(axis=1) * sizes))
    return float(s.sum() / denom) if denom > 0 else np.nan


def r_squared(y, yhat):
    y = np.asarray(y, float)
    yhat = np.asarray(yhat, float)
    ok = np.isfinite(y) & np.isfinite(yhat)
    y, yhat = y[ok], yhat[ok]
    if y.size < 2:
        return np.nan
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    if ss_tot == 0:
        return np.nan
    return 1.0 - float(np.sum((y - yhat) ** 2)) / ss_tot


def raw_features(params, y0):
    """Columns for the regression: non-constant, log where positive."""
    X = np.column_stack([np.asarray(params, float), np.asarray(y0, float)])
    cols = []
    for j in range(X.shape[1]):
        c = X[:, j]
        fin = c[np.isfinite(c)]
        if fin.size == 0 or np.all(fin == fin[0]):
            continue
        if np.all(fin > 0):
            with np.errstate(divide="ignore", invalid="ignore"):
                c = np.log(c)
        cols.append(c)
    if not cols:
        return np.zeros((X.shape[0], 0))
    return np.column_stack(cols)


class StepPredictor:
    """Least-squares model of step count on (log-)features.

    ``target="log"`` fits ``log(steps)`` (better for heavy-tailed step
    counts, e.g. stiff corners of a parameter space); :meth:`predict`
    always returns steps.
    """

    def __init__(self, degree=1, target="linear"):
        self.degree = int(degree)
        if target not in ("linear", "log"):
            raise ValueError("target must be 'linear' or 'log'")
        self.target = target

    def _design(self, F):
        Z = (F - self.mu) / self.sd
        cols = [np.ones(Z.shape[0])]
        cols += [Z[:, j] for j in range(Z.shape[1])]
        if self.degree >= 2:
            for a in range(Z.shape[1]):
                for b in range(a, Z.shape[1]):
                    cols.append(Z[:, a] * Z[:, b])
        return np.column_stack(cols)

    def fit(self, F, steps):
        F = np.asarray(F, float)
        y = np.asarray(steps, float)
        if self.target == "log":
            with np.errstate(divide="ignore", invalid="ignore"):
                y = np.log(np.maximum(y, 1.0))
        ok = np.all(np.isfinite(F), axis=1) & np.isfinite(y)
        Fo = F[ok]
        self.mu = Fo.mean(axis=0) if Fo.size else np.zeros(F.shape[1])
        sd = Fo.std(axis=0) if Fo.size else np.ones(F.shape[1])
        self.sd = np.where(sd > 0, sd, 1.0)
        self.fill = float(np.mean(y[ok])) if ok.any() else 0.0
        A = self._design(Fo)
        if A.shape[0] == 0:
            self.coef = np.zeros(A.shape[1])
        else:
            self.coef, *_ = np.linalg.lstsq(A, y[ok], rcond=None)
        return self

    def predict(self, F):
        F = np.asarray(F, float)
        ok = np.all(np.isfinite(F), axis=1)
        out = np.full(F.shape[0], self.fill)
        if ok.any():
            out[ok] = self._design(F[ok]) @ self.coef
        if self.target == "log":
            out = np.exp(np.minimum(out, 700.0))
        return out

    @staticmethod
    def n_coef(degree, n_features):
        return 1 + n_features + (n_features * (n_features + 1) // 2
                                 if degree >= 2 else 0)


def default_pilot_size(n_tasks):
    """10% of the tasks, at least 64 and at most 1000 (paper: 1000), but
    never more than half of the batch (the rest is what gets sorted)."""
    return int(max(2, min(n_tasks // 2, max(64, min(1000, n_tasks // 10)))))


def choose_pilot(n_tasks, pilot_size, rng):
    k = int(min(n_tasks, pilot_size))
    return np.sort(rng.choice(n_tasks, size=k, replace=False))


def select_model(F, steps, degree="auto", target="auto", seed=0):
    """Pick degree (1/2) and target (linear/log) of the step predictor.

    Fixed values are used as given; for ``"auto"`` the candidates are
    compared by R^2 (on the step scale) on a random quarter of the pilot
    after fitting on the rest. A candidate needs at least 5 training tasks
    per coefficient.
    """
    degrees = [1, 2] if degree == "auto" else [int(degree)]
    targets = ["linear", "log"] if target == "auto" else [target]
    n = len(steps)
    n_val = n // 4
    n_tr = n - n_val
    cands = [(d, t) for d in degrees for t in targets
             if len(degrees) == 1
             or n_tr >= 5 * StepPredictor.n_coef(d, F.shape[1])]
    if not cands:
        cands = [(1, targets[0])]
    if len(cands) == 1 or n_val < 5:
        return cands[0] + (np.nan,)
    perm = np.random.default_rng(seed).permutation(n)
    val, tr = perm[:n_val], perm[n_val:]
    best = None
    for d, t in cands:
        m = StepPredictor(d, t).fit(F[tr], steps[tr])
        r2 = r_squared(steps[val], m.predict(F[val]))
        r2 = -np.inf if not np.isfinite(r2) else r2
        if best is None or r2 > best[2]:
            best = (d, t, r2)
    return best


def plan_order(features, pilot_idx, pilot_steps, degree="auto",
               fit_mask=None, target="auto"):
    """Fit on the pilot, predict all tasks, return ``(rest_order, info)``.

    ``pilot_steps`` are the step counts of ``pilot_idx``; ``fit_mask``
    (boolean, per pilot task) excludes some from the fit, e.g. tasks with
    non-finite inputs. ``rest_order`` are the non-pilot tasks sorted by
    predicted step count (stable, so ties keep the caller's order).
    """
    n = features.shape[0]
    pilot_idx = np.asarray(pilot_idx)
    pilot_steps = np.asarray(pilot_steps, float)
    if fit_mask is None or not np.any(fit_mask):
        fit_mask = np.ones(pilot_idx.size, bool)
    fit_idx, fit_steps = pilot_idx[fit_mask], pilot_steps[fit_mask]
    deg, tgt, r2_val = select_model(features[fit_idx], fit_steps, degree,
                                    target)
    pred_model = StepPredictor(deg, tgt).fit(features[fit_idx], fit_steps)
    predicted = pred_model.predict(features)
    r2_pilot = r_squared(fit_steps, predicted[fit_idx])
    mask = np.ones(n, bool)
    mask[pilot_idx] = False
    rest = np.flatnonzero(mask)
    rest_order = rest[np.argsort(predicted[rest], kind="stable")]
    info = BundleInfo(bundle_size=32, pilot_idx=pilot_idx,
                      order=np.concatenate([pilot_idx, rest_order]),
                      predicted=predicted, degree=deg, r2_pilot=r2_pilot,
                      target=tgt, r2_validation=r2_val)
    return rest_order, info


def finish_diagnostics(info, steps, bundle_size, valid=None):
    """Fill the post-run diagnostics of ``info`` from true ``steps``.

    ``valid`` (boolean per task) limits the held-out R^2 to tasks whose
    step count means something (not those rejected for non-finite input).
    """
    steps = np.asarray(steps, float)
    n = steps.size
    info.bundle_size = int(bundle_size)
    mask = np.ones(n, bool) if valid is None else np.asarray(valid, bool)
    mask = mask.copy()
    mask[info.pilot_idx] = False
    info.r2_heldout = r_squared(steps[mask], info.predicted[mask])
    info.efficiency_unsorted = lockstep_efficiency(steps, bundle_size)
    by_pred = np.argsort(info.predicted, kind="stable")
    info.efficiency_sorted = lockstep_efficiency(steps[by_pred], bundle_size)
    info.efficiency_executed = lockstep_efficiency(steps[info.order],
                                                   bundle_size)
    info.efficiency_oracle = lockstep_efficiency(
        np.sort(steps), bundle_size)
    return info
