"""Hot loops, one module per likelihood family, behind the datafit interface.

``kernels.cpu`` holds Numba ``@njit`` implementations; a GPU backend provides the
same operations with device kernels. Models never loop over rows in Python.
Every CPU kernel is compiled with ``nogil=True``: replicate fits (cross-validation,
bootstrap) sharing one datafit run in parallel threads.
"""
