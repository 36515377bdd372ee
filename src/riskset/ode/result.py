"""Result object of :func:`riskset.ode.solve_batch`."""

from dataclasses import dataclass, field

import numpy as np

from .dopri import STATUS_NAMES, SUCCESS


@dataclass
class BatchResult:
    """Solutions of a batch of ODE tasks, in the caller's task order.

    Attributes
    ----------
    t : (n_times,) output times.
    states : (n_tasks, n_times, n_states) solution at ``t`` (NaN for times a
        failed task did not reach).
    status : (n_tasks,) int codes: 0 success, 1 max steps reached, 2 step
        size underflow, 3 non-finite parameters / initial state / derivative.
    n_accepted, n_rejected, nfev : (n_tasks,) per-task statistics.
    state_names, param_names : names of the columns.
    set_ids : (n_tasks,) labels of the tasks (the ``set`` column).
    params, y0 : the inputs as float arrays.
    bundling : :class:`~riskset.ode.bundling.BundleInfo` or None.
    """

    t: np.ndarray
    states: np.ndarray
    status: np.ndarray
    n_accepted: np.ndarray
    n_rejected: np.ndarray
    nfev: np.ndarray
    state_names: tuple
    param_names: tuple
    set_ids: np.ndarray
    params: np.ndarray
    y0: np.ndarray
    model_name: str = ""
    backend: str = "cpu"
    rtol: float = np.nan
    atol: np.ndarray = None
    bundling: object = None
    elapsed: float = np.nan
    extra: dict = field(default_factory=dict)

    @property
    def n_tasks(self):
        return self.states.shape[0]

    @property
    def success(self):
        """Boolean mask of tasks that reached the last output time."""
        return self.status == SUCCESS

    @property
    def n_steps(self):
        """Attempted steps per task (accepted + rejected)."""
        return self.n_accepted + self.n_rejected

    @property
    def status_names(self):
        return np.array([STATUS_NAMES.get(int(s), str(s))
                         for s in self.status])

    def state(self, name):
        """(n_tasks, n_times) array of one state."""
        try:
            j = self.state_names.index(name)
        except ValueError:
            raise KeyError(f"unknown state {name!r}; states: "
                           f"{list(self.state_names)}") from None
        return self.states[:, :, j]

    def to_frame(self):
        """Tidy DataFrame: columns ``set, t`` and one column per state."""
        import pandas as pd

        n, nt, ns = self.states.shape
        data = {
            "set": np.repeat(np.asarray(self.set_ids), nt),
            "t": np.tile(self.t, n),
        }
        flat = self.states.reshape(n * nt, ns)
        for j, name in enumerate(self.state_names):
            data[name] = flat[:, j]
        return pd.DataFrame(data)

    def stats_frame(self):
        """One row per task: set, status, accepted/rejected steps, nfev."""
        import pandas as pd

        return pd.DataFrame({
            "set": np.asarray(self.set_ids),
            "status": self.status_names,
            "n_accepted": self.n_accepted,
            "n_rejected": self.n_rejected,
            "nfev": self.nfev,
        })

    def lockstep_efficiency(self, bundle_size=32, order=None):
        """Lockstep efficiency of these tasks' step counts in ``order``
        (default: the caller's order; ``"sorted"``: by true step count), see
        :func:`riskset.ode.bundling.lockstep_efficiency`."""
        from .bundling import lockstep_efficiency

        steps = self.n_steps
        if order is None:
            return lockstep_efficiency(steps, bundle_size)
        if isinstance(order, str):
            if order != "sorted":
                raise ValueError("order must be None, 'sorted' or indices")
            return lockstep_efficiency(np.sort(steps), bundle_size)
        return lockstep_efficiency(steps[np.asarray(order)], bundle_size)

    def fan_chart(self, state, **kwargs):
        """Quantile bands over tasks of one state vs time; see
        :func:`riskset.ode.plots.fan_chart`."""
        from .plots import fan_chart

        return fan_chart(self, state, **kwargs)

    def __repr__(self):
        n, nt, ns = self.states.shape
        counts = {STATUS_NAMES[k]: int(np.sum(self.status == k))
                  for k in STATUS_NAMES if np.any(self.status == k)}
        return (f"BatchResult(model={self.model_name!r}, tasks={n}, "
                f"times={nt}, states={list(self.state_names)}, "
                f"backend={self.backend!r}, status={counts}, "
                f"mean accepted steps={np.mean(self.n_accepted):.1f})")
