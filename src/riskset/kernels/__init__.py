"""Hot loops, one module per likelihood family, behind the datafit interface.

``kernels.cpu`` holds Numba ``@njit`` implementations; a GPU backend provides the
same operations with device kernels. Models never loop over rows in Python.
"""
