"""How the threaded product kernels split the rows of X: into row *blocks* (the CSR kernels,
each block's partial result summed in block order) and row *tiles* (the CSC kernels, each
tile's slice of an N-vector kept in a core's cache). Both are functions of X's shape only,
never of the threads: the products give the same bits on any number of threads.
"""
from __future__ import annotations

import numpy as np

#: Fewest rows of a block of the threaded kernels (a block's work must dwarf its start-up).
MIN_BLOCK_ROWS = 4096
#: Most row blocks: enough to balance 16 threads; each block of an ``X_A' z`` keeps an |A|-vector.
MAX_BLOCKS = 64
#: Rows of a tile of the CSC products: the tile's slice of an N-vector (32 KB of float64, a
#: core's L1 data cache) stays next to the core while every column of A passes over it (4k rows
#: beat 32k where L2 is slow to random reads: docs/performance.md).
TILE_ROWS = 1 << 12


def row_blocks(n_rows: int, max_blocks: int = MAX_BLOCKS) -> np.ndarray:
    """Boundaries of the row blocks of the threaded kernels: a function of N (and of the
    size of a block's partial result, through ``max_blocks``), never of the threads.

    >>> row_blocks(10).tolist(), row_blocks(3 * MIN_BLOCK_ROWS).tolist()
    ([0, 10], [0, 4096, 8192, 12288])
    """
    n_blocks = int(min(max_blocks, max(1, n_rows // MIN_BLOCK_ROWS)))
    return np.linspace(0, n_rows, n_blocks + 1).round().astype(np.int64)


def row_tiles(n_rows: int, n_cols: int, nnz: int) -> np.ndarray:
    """Boundaries of the row tiles of the CSC products, every :data:`TILE_ROWS` rows, fewer
    where the table of tile pointers (tiles x columns) would exceed a quarter of the
    non-zeros: a function of the shape of X, never of the threads.

    >>> row_tiles(10, 3, 30).tolist(), row_tiles(3 * TILE_ROWS, 1, 10**9).tolist()
    ([0, 10], [0, 4096, 8192, 12288])
    """
    n_tiles = int(min(-(-n_rows // TILE_ROWS), max(1, nnz // (4 * max(n_cols, 1)))))
    return np.linspace(0, n_rows, max(n_tiles, 1) + 1).round().astype(np.int64)

