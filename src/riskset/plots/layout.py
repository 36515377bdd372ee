"""Figures that keep every label inside the canvas, however they are saved."""
from __future__ import annotations

#: Margin (inches) kept between the outermost text and the figure's edge.
PAD = 0.06


def fit_to_canvas(fig, pad: float = PAD) -> None:
    """Resize ``fig`` and move its axes so that every visible artist (tick labels, titles,
    legends, text written outside the axes: value columns, names at curve ends, at-risk
    tables) lies inside the figure, ``pad`` inches from its edges, and no blank margin is
    left: a plain ``fig.savefig(path)`` then gives what ``bbox_inches="tight"`` gives at
    save time. The axes keep their size in inches.

    >>> import matplotlib; matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots(figsize=(3, 2))
    >>> _ = ax.text(1.05, 0.5, "a long label right of the axes", transform=ax.transAxes)
    >>> fit_to_canvas(fig)
    >>> bool(fig.get_size_inches()[0] > 3)
    True
    """
    fig.canvas.draw()
    tight = fig.get_tightbbox(fig.canvas.get_renderer())  # inches
    width, height = fig.get_size_inches()
    # margins to add (negative: blank canvas to crop) so that the artists end ``pad`` from each edge
    left, bottom = pad - tight.x0, pad - tight.y0
    right, top = tight.x1 + pad - width, tight.y1 + pad - height
    if max(map(abs, (left, bottom, right, top))) < 1e-3:
        return
    new_width, new_height = width + left + right, height + bottom + top
    for ax in fig.axes:
        if ax.get_axes_locator() is not None:  # inset axes follow their parent
            continue
        box = ax.get_position()
        ax.set_position([(box.x0 * width + left) / new_width, (box.y0 * height + bottom) / new_height,
                         box.width * width / new_width, box.height * height / new_height])
    fig.set_size_inches(new_width, new_height)
    fig.canvas.draw()
