"""The files ``riskset fit`` (and ``riskset simulate``) write: --out checked before any work,
a fit's tables (FILE.csv with FILE_NAME.csv beside it, or FILE.json holding everything) and
its plots."""
from __future__ import annotations

import json
import os

from riskset.exceptions import InputError


def check_output(path, option, suffixes=()) -> None:
    """Refuse an output file that cannot be written, before any work is done."""
    if not path:
        return
    if suffixes and not path.lower().endswith(suffixes):
        raise InputError(f"{option} {path!r}: the file name must end in {' or '.join(suffixes)}")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise InputError(f"{option} {path!r}: the folder {folder!r} does not exist; create it first")
    if not os.access(folder, os.W_OK):
        raise InputError(f"{option} {path!r}: the folder {folder!r} is not writable")
    if os.path.isdir(path):
        raise InputError(f"{option} {path!r} is a folder; give a file name")


def write_fit(out: str, fit, tables: dict, level: float) -> list[str]:
    """Write one fit to ``out``: JSON holds everything, CSV the coefficients with the other tables beside."""
    if out.endswith(".csv"):
        return write_tables(out, {"coefficients": fit.coef_table(level)} | tables)
    result = fit.to_dict() | {"coef_table": fit.coef_table(level).to_dict(orient="records")}
    result |= {name: table.to_dict(orient="records") for name, table in tables.items()}
    with open(out, "w") as f:
        json.dump(result, f, indent=2)
    return [f"{out} (the fit{''.join(', ' + n.replace('_', '-') for n in tables)})"]


def write_tables(out: str, tables: dict) -> list[str]:
    """The 'coefficients' table to ``out``, every other one beside it as STEM_NAME.EXT; the files written."""
    stem, ext = os.path.splitext(out)
    written = []
    for name, table in tables.items():
        path = out if name == "coefficients" else f"{stem}_{name}{ext}"
        if ext == ".csv":
            table.to_csv(path, index=False)
        else:
            table.to_json(path, orient="records", indent=2)
        written.append(f"{path} ({name.replace('_', '-')})")
    return written


def plot_analysis(plot_dir, analysis) -> list[str]:
    """The cross-validation curve and the bootstrap forest plot, those computed, into ``plot_dir``."""
    plots = {"cross_validation.png": analysis.cv, "bootstrap_forest.png": analysis.boot}
    written = []
    for name, result in plots.items():
        if plot_dir and result is not None:
            path = os.path.join(plot_dir, name)
            result.plot(path)
            written.append(f"{path} (plot)")
    return written
