"""Cox proportional hazards on the device: Breslow and Efron ties, strata, (start, stop] rows.

:class:`CoxDeviceDatafit` holds the device copies of a prepared CPU Cox datafit's design and
device record (:class:`~riskset.kernels.cpu.cox_records.DeviceCox`: X, the entry and exit slots
of every row and non-zero, the breakpoints of (start, stop] rows, per replicate the slot event
counts and the static gradient) and launches the kernels, written by role:

* :mod:`.cox_refresh`: the exact state from eta and the per-slot aggregates (segmented scans
  over the slots);
* :mod:`.cox_sweep`: the family's device functions of the persistent sweep (gradient,
  terms, move) and the compiled sweeps;
* :mod:`.cox_hessian`: the Newton polish of a single fit (row hazards, Hessian-vector rows).

What Cox shares with Fine-Gray (launches, stratum shifts, weight moves) is in
:mod:`.risk_sets`.
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from riskset.data.risksets import column_breakpoints

from .cox_hessian import hessian_rows_kernel, row_hazards_kernel
from .cox_refresh import sync_grid_kernel, sync_kernel
from .cox_sweep import gradient_kernel, nz_flags_kernel, sweep_grid_kernel, sweep_kernel
from .device import device_copy, row_blocks
from .risk_sets import RiskSetDeviceDatafit


class CoxDeviceDatafit(RiskSetDeviceDatafit):
    """:class:`~riskset.models.cox.CoxDatafit` (Breslow or Efron ties, strata, (start, stop]
    rows, hence step-function time-varying coefficients) on the device; each replicate
    has its own slot event counts ``d`` and (Efron) tie counts ``m``.
    """

    family_name = "cox"
    sweep_kernel = staticmethod(sweep_kernel)  # a dispatcher binds like a function: no self
    gradient_kernel = staticmethod(gradient_kernel)
    sweep_grid_kernel = staticmethod(sweep_grid_kernel)
    device_quadratic = True
    state_fields = ("eta", "w", "ex", "en", "ev", "S", "Q1", "Q2", "A1c", "A2c", "R1", "R2", "T2", "dirty", "gpart",
                    "tmp")

    def __init__(self, cpu, dtype="float64", weights=None):
        super().__init__(cpu, dtype, weights)
        #: what the device copies besides the design (:class:`~riskset.kernels.cpu.cox_records.DeviceCox`)
        self.record = cpu.device_record()
        self.has_start = bool(self.record.slots.has_start)
        # Efron terms wherever the data have tied events (a reweighting never adds ties; in a
        # replicate whose slots all have m <= 1 they are exactly the Breslow terms)
        self.efron = bool(self.record.slots.efron)

    def _make_static(self):
        """Device copies of the design (a value per non-zero: the device kernels read no value
        shift) and of the record's rows and slots, with each non-zero's slots."""
        design, rows, slots = self.design, self.record.rows, self.record.slots
        ks, ke = np.asarray(rows.ks, np.int64), np.asarray(rows.ke, np.int64)
        idx = design.indices
        stype = np.int32 if slots.slot_d.shape[0] < 2**31 - 1 else np.int64
        ev = np.asarray(rows.event, np.uint8)
        one8 = np.zeros(1, np.uint8)
        static = dict(indptr=device_copy(design.indptr.astype(np.int64)),
                      indices=device_copy(idx.astype(self.itype)),
                      values=device_copy(design.full_values(self.dtype)),
                      indicator=device_copy(np.asarray(design.unit, np.uint8)),
                      ksn=device_copy(ks[idx].astype(stype)),
                      ken=device_copy(ke[idx].astype(stype)),
                      evn=device_copy(ev[idx] if self.efron else one8),
                      ke=device_copy(ke),
                      ks=device_copy(ks),
                      event=device_copy(ev),
                      row_stratum=device_copy(np.asarray(rows.row_stratum, np.int32)),
                      slot_first=device_copy(np.asarray(self.record.slot_first, np.uint8)),
                      slot_last=device_copy(np.asarray(slots.slot_last, np.uint8)))
        bcode, bpos, bhead = self._breakpoints(stype)
        static.update(bcode=device_copy(bcode), bpos=device_copy(bpos), bhead=device_copy(bhead))
        return static

    def _grid(self) -> bool:
        return super()._grid() and not self.has_start  # the breakpoint walk has no grid version yet

    def _nz_flags(self):
        """``nzf`` of every non-zero (:data:`~.cox_sweep.STRATUM_HEAD`, :data:`~.cox_sweep.RUN_HEAD` within its column),
        on the device, for the whole-grid sweep."""
        s = self._dev_static()
        if "nzf" not in s:
            s["nzf"] = cuda.device_array(max(len(self.design.indices), 1), dtype=np.uint8)
            nz_flags_kernel[max(1, min(self.n_coef, 4096)), self.helper_threads](s["indptr"], s["ksn"], s["ken"],
                                                                                 s["nzf"])
        return s["nzf"]

    def _breakpoints(self, stype):
        """(start, stop] rows: per column its entry and exit breakpoints in descending slot order
        (the CPU's ``column_breakpoints`` per column reversed): the code ``2 e + exit`` of
        non-zero e, its slot, and whether it starts a stratum within the column. Placeholders
        of length 1 for right-censored data."""
        if not self.has_start:
            return np.zeros(1, np.int32), np.zeros(1, stype), np.zeros(1, np.uint8)
        rec, indices = self.record, self.design.indices
        indptr = np.asarray(self.design.indptr, np.int64)
        codes = rec.codes
        if codes is None:  # formulation='scan' builds none
            codes = column_breakpoints(indptr, indices, rec.rows.ks, rec.rows.ke)
        nb = 2 * (indptr[1:] - indptr[:-1])
        lo = np.repeat(2 * indptr[:-1], nb)
        k = np.arange(lo.shape[0], dtype=np.int64)
        bcode = np.ascontiguousarray(codes[lo + (lo + np.repeat(nb, nb) - 1 - k)])  # reverse within each column
        rows = np.asarray(indices, np.int64)[bcode >> 1]
        exits = (bcode & 1) != 0
        bpos = np.where(exits, np.asarray(rec.rows.ke, np.int64)[rows], np.asarray(rec.rows.ks, np.int64)[rows])
        stratum = np.asarray(rec.slots.slot_stratum, np.int64)[bpos]
        bhead = np.ones(bpos.shape[0], np.uint8)
        bhead[1:] = stratum[1:] != stratum[:-1]
        bhead[2 * indptr[:-1][nb > 0]] = 1  # the first breakpoint of every column
        return bcode, bpos.astype(stype), bhead

    def _sorted_weights(self):
        """(R, N) case weights in sorted (datafit) row order."""
        if self.weights is None:
            return np.asarray(self.record.rows.cw, np.float64)[None, :]
        return self.weights[:, self.record.data_rows]

    def _rep(self):
        """Weight-dependent device arrays: case weights, slot event counts (and tie counts), gx0.

        As the CPU's ``reweighted``: ``d`` = weighted events per slot, ``m`` = event rows
        with positive weight per slot."""
        if self._per_rep is None:
            rec = self.record
            cw = self._sorted_weights()
            ev = np.asarray(rec.rows.event, bool)
            ns = rec.n_slots
            eslot = np.asarray(rec.rows.ke, np.int64)[ev] - 1
            slot_d = np.stack([np.bincount(eslot, weights=c[ev], minlength=ns) for c in cw])
            if self.efron:
                slot_m = np.stack([np.bincount(eslot, weights=(c[ev] > 0), minlength=ns) for c in cw])
            else:
                slot_m = np.zeros((1, 1))
            gx0 = np.stack([rec.products.dot(np.arange(self.n_coef), c * ev) for c in cw])
            self._per_rep = dict(cw=device_copy(cw, self.dtype),
                                 slot_d=device_copy(slot_d, np.float64),
                                 slot_m=device_copy(slot_m, np.float64),
                                 gx0=device_copy(gx0, np.float64), gx0_host=gx0)
        return self._per_rep

    def _allocate(self, state):
        R, n, ns = self.n_rep, self.n_rows, self.record.n_slots
        state.d["w"] = cuda.device_array((R, n), dtype=self.dtype)
        names = ["ex", "S", "Q1", "Q2", "A1c", "A2c"]
        names += ["en"] if self.has_start else []
        names += ["ev", "R1", "R2", "T2"] if self.efron else []
        for name in names:
            state.d[name] = cuda.device_array((R, ns), dtype=np.float64)
        unused = cuda.device_array((1, 1), dtype=np.float64)  # never read without its feature
        for name in ("en", "ev", "R1", "R2", "T2"):
            state.d.setdefault(name, unused)
        state.d["shift"] = cuda.device_array((R, self.record.n_strata), dtype=np.float64)  # sync_kernel
        state.d["dirty"] = device_copy(np.ones(R, np.int32))
        state.d["ll"] = cuda.device_array(R, dtype=np.float64)
        self._allocate_grid_scratch(state)

    def local_quadratic(self, state, columns):
        """:meth:`riskset.models.cox.CoxDatafit.local_quadratic` on the device for a single fit
        over the whole grid in float64 (the host's from a rebuilt CPU state otherwise): g and
        the diagonal scale by one block per column, each product ``H_AA b`` by the cooperative
        :func:`~.cox_hessian.hessian_rows_kernel` and one block per column."""
        if not self._polish_on_device():
            return super().local_quadratic(state, columns)
        from riskset.core.interface import LocalQuadratic

        s, d = self._dev_static(), state.d
        self._refresh(state)  # exact per-slot Q2, R2, T2 and cumulative A1c from eta
        cols_h = np.ascontiguousarray(columns, dtype=np.int64)
        cols, m, n, ns = device_copy(cols_h), cols_h.shape[0], self.n_rows, self.record.n_slots
        rows = cuda.device_array((1, n), dtype=np.float64)
        threads = self.helper_threads
        row_hazards_kernel[row_blocks(n, threads, 4096), threads](int(self.efron), d["w"], s["ks"], s["ke"], s["event"],
                                                                  d["A1c"], d["R1"], rows)
        dots = cuda.device_array((m, 2), dtype=np.float64)
        xv, x2v = self._column_dots(cols, rows, dots).T
        u, z = cuda.device_array((1, n), dtype=np.float64), rows  # the hazards are not read again
        U1, Cn, E1u = (cuda.device_array((1, ns), dtype=np.float64) for _ in range(3))

        def hessian_times(b):
            if not self._launch_grid(hessian_rows_kernel, int(self.has_start), int(self.efron), s["indptr"],
                                     s["indices"], s["values"], cols, device_copy(b, np.float64), s["ks"], s["ke"],
                                     s["event"], d["w"], d["A1c"], d["R1"], d["Q2"], d["R2"], d["T2"], s["slot_first"],
                                     s["slot_last"], u, U1, Cn, E1u, z, d["gpart"]):
                raise RuntimeError("the cooperative Hessian-vector kernel could not be launched")
            return self._column_dots(cols, z, dots)[:, 0]

        return LocalQuadratic(self._rep()["gx0_host"][0, cols_h] - xv, x2v, hessian_times)

    def _slot_args(self, p, d):
        s = self._dev_static()
        return (d["ex"], d["en"], d["ev"], p["slot_d"], p["slot_m"], s["slot_first"], s["slot_last"], d["S"],
                d["Q1"], d["Q2"], d["A1c"], d["A2c"], d["R1"], d["R2"], d["T2"], d["dirty"])

    def _refresh(self, state):
        s, p, d = self._dev_static(), self._rep(), state.d
        args = (int(self.has_start), int(self.efron), d["eta"], p["cw"], d["w"], s["ks"], s["ke"], s["event"],
                s["row_stratum"], d["shift"], *self._slot_args(p, d), d["ll"])
        if not self._launch_grid(sync_grid_kernel, *args, d["gpart"], self._grid_partial()):
            self._launch(sync_kernel, *args)

    def kernel_data(self):
        s, p = self._dev_static(), self._rep()
        return (int(self.has_start), int(self.efron), s["indptr"], s["indices"], s["values"], s["indicator"],
                s["ksn"], s["ken"], s["evn"], s["bcode"], s["bpos"], s["bhead"], p["gx0"], p["slot_d"], p["slot_m"],
                s["slot_first"], s["slot_last"], self._nz_flags() if self._grid() else s["slot_first"])
