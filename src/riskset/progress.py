"""The line shown while a model is prepared (``progress=True`` of the fits and selections)."""
from __future__ import annotations

import contextlib


@contextlib.contextmanager
def preparing(show: bool, model, data):
    """With ``show``, a line naming the preparation of ``model`` on ``data`` while it runs, with
    its elapsed time (at scale the sorts, risk sets and compact design precede the first cycle)."""
    if not show:
        yield
        return
    from tqdm.auto import tqdm

    bar = tqdm(total=1, desc=f"preparing the {model.name} model ({data.n_rows:,} rows, {data.X.nnz:,} non-zeros)",
               bar_format="{desc} [{elapsed}]", leave=False)
    try:
        yield
    finally:
        bar.update(1)
        bar.close()
