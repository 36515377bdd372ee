"""The named records the Cox kernels read and write (notation: :mod:`riskset.kernels.cpu.cox`).

A kernel takes the records whole and reads their fields by name, so that no call passes a
long run of arrays by position. ``CoxDatafit`` builds them in one place each
(:meth:`~riskset.models.cox.CoxDatafit.slots`, ``.rows``, ``.kernel_data``, ``.new_state``):
the static ones per call (a reweighted view shares the design but not its case weights, event
counts or ties), the state's once per state. :class:`DeviceCox` is no kernel's: it is what the
device datafit copies (``.device_record``).
"""
from typing import NamedTuple

import numpy as np

from riskset.core.products.column_products import ColumnProducts


class Slots(NamedTuple):
    """The event slots: slot p belongs to stratum ``slot_stratum[p]``; stratum s owns slots
    ``slot_ptr[s] .. slot_ptr[s+1] - 1``, the last one terminal (``slot_last``)."""

    slot_ptr: np.ndarray
    slot_stratum: np.ndarray
    slot_last: np.ndarray
    slot_d: np.ndarray       # weighted event count of the slot
    slot_m: np.ndarray       # tied event rows of positive weight
    has_start: bool          # (start, stop] rows: rows enter risk sets after their stratum's first slot
    efron: bool              # Efron's ties and some slot with tied events


class Rows(NamedTuple):
    """Per row, in datafit order (stratum, time descending): its case weight, entry and exit
    slots and event flag; and the pieces of the O(N) passes in parallel
    (:func:`~riskset.kernels.cpu.cox_rows.row_pieces`)."""

    cw: np.ndarray
    ks: np.ndarray
    ke: np.ndarray
    event: np.ndarray
    row_stratum: np.ndarray
    piece_ptr: np.ndarray
    piece_stratum: np.ndarray


class Sums(NamedTuple):
    """Per slot: the slot sums of w (``ex`` by exit slot, ``en`` by entry slot, ``ev`` over
    the event rows) that moves keep current, the denominators D and the aggregates made from
    them (Q1, Q2, R1, R2, T2 and the stratum cumsums A1c, A2c)."""

    ex: np.ndarray
    en: np.ndarray
    ev: np.ndarray
    D: np.ndarray
    Q1: np.ndarray
    Q2: np.ndarray
    R1: np.ndarray
    R2: np.ndarray
    T2: np.ndarray
    A1c: np.ndarray
    A2c: np.ndarray


class SparseData(NamedTuple):
    """The static data of the "sparse" formulation, O(nnz_j) per coordinate."""

    indptr: np.ndarray       # the design (:class:`riskset.core.design.CompactCSC`)
    indices: np.ndarray
    values: np.ndarray
    value_shift: np.ndarray
    indicator: np.ndarray
    gx0: np.ndarray          # per column: sum over events of c x
    ksn: np.ndarray          # per non-zero: its row's entry slot (with start times; else empty), exit slot, event
    ken: np.ndarray
    evn: np.ndarray
    codes: np.ndarray        # per non-zero: the column's breakpoints (read only with start times)
    slots: Slots
    strata_ptr: np.ndarray   # col_strata[strata_ptr[j]:strata_ptr[j + 1]]: the strata of column j's rows,
    col_strata: np.ndarray   # the only ones whose aggregates a move of column j leaves stale
    parallel: bool           # more than one kernel thread (:func:`~riskset.kernels.cpu.cox_aggregates.refresh`)
    walk_chunk: int          # non-zeros per chunk of a column's walk and parallel move


class SparseState(NamedTuple):
    """What a sparse sweep writes: eta, w, the slot sums and aggregates, and ``moved``, the
    columns moved since the last refresh (``moved[0]`` of them, then their indices;
    ``ALL_MOVED`` when more than fit): the next refresh makes their strata current, and only those."""

    eta: np.ndarray
    w: np.ndarray
    sums: Sums
    moved: np.ndarray


class ScanData(NamedTuple):
    """The static data of the "scan" formulation, O(N + n_slots) per coordinate."""

    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    value_shift: np.ndarray
    rows: Rows
    slots: Slots


class ScanState(NamedTuple):
    """What a scan sweep writes: eta, w and the column of the scan scattered to rows."""

    eta: np.ndarray
    w: np.ndarray
    xd: np.ndarray


class DeviceCox(NamedTuple):
    """What the device datafit (:mod:`riskset.kernels.gpu.cox`) copies besides the design, built
    by :meth:`~riskset.models.cox.CoxDatafit.device_record`: the kernels' rows and slots, and
    what no CPU kernel reads (so no kernel record carries it): the first slot of each stratum,
    the column breakpoints of (start, stop] rows (None where the formulation builds none: the
    scan's), the Dataset row of each row (replicate weights come in Dataset row order) and the
    design's products (the static gradient X' (c event) of each replicate's weights)."""

    rows: Rows
    slots: Slots
    slot_first: np.ndarray   # per slot: 1 where it is the first of its stratum
    codes: np.ndarray | None
    data_rows: np.ndarray
    products: ColumnProducts

    @property
    def n_slots(self) -> int:
        return self.slots.slot_last.shape[0]

    @property
    def n_strata(self) -> int:
        return self.slots.slot_ptr.shape[0] - 1
