"""Products of column subsets X[:, A] of one CSC matrix with vectors, computed once per datafit.

:class:`~.column_products.ColumnProducts` gives every family the products its Newton polish,
full gradient and Hessian blocks need: ``X_A b`` (``times``), ``X_A' z`` (``dot``, ``dot2``)
and ``X_A' diag(c) X_A`` (``gram``). Column ``-1`` of a set A is the column of ones (a GLM's
implicit intercept).

Two layouts, chosen per call by the work they do:

* the CSC itself, O(nnz of A) per product, but each non-zero reads or writes an N-vector at
  a random row. It is read by *tiles* of rows (:data:`~.partition.TILE_ROWS`, pointers into
  every column found once per datafit): a tile's slice of the N-vector stays in the core's
  cache while the columns of A pass over it, and the tiles run on all threads (a random
  non-zero then costs ~1.5 streamed ones).
  The products read each non-zero's row as its offset in its tile, 16 bits where the tiles
  allow (``ColumnProducts.tile_rows``): half the bytes of the row indices;
* a row-major copy (CSR, built lazily, once), which streams: ``X_A b`` gathers from the
  small ``b`` row by row and ``X_A' z`` scatters into a small |A|-vector; it reads every
  non-zero of the row, so it wins when A holds a good share of X's non-zeros. For designs
  of indicators its values are not stored. Products asked again and again for one A (the
  Newton steps of a polish: Hessian blocks, Hessian-vector products) read A's own row-major
  copy instead, built by row blocks and kept per thread. A weighted Hessian-vector product
  ``X_A' diag(c) X_A b`` (``ColumnProducts.gram_times``) takes both halves in one pass over
  a row, which is still in the cache for the second.

Threads: the kernels split the rows into blocks or tiles whose boundaries depend on the
shape of X only (:func:`~.partition.row_blocks`, :func:`~.partition.row_tiles`); partial
|A|-vectors of the blocks are summed in block order. Each number is therefore computed by
the same operations in the same order whatever the number of threads
(``numba.set_num_threads``, set by the caller): results are bitwise equal on 1 and k threads.

The modules, by concern:

* :mod:`.column_products`: ``ColumnProducts``, which picks the layout of each product and
  keeps what a datafit and its reweighted views share (the row-major copy, the tile offsets,
  the column norms, products asked again);
* :mod:`.partition`: the row blocks and tiles of the threaded kernels;
* :mod:`.csc`: the compiled products on the CSC (tiles, merges of column pairs, norms);
* :mod:`.row_copy`: the compiled row-major copies of X and of a column subset;
* :mod:`.csr`: the compiled products on a row-major copy, and the block-ordered sums of the
  blocks' partial results.
"""
