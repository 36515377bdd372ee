"""Hot loops, one module per likelihood family, behind the datafit interface.

``kernels.cpu`` holds Numba ``@njit`` implementations; a GPU backend provides the
same operations with device kernels. Models never loop over rows in Python.
Every CPU kernel is compiled with ``nogil=True``: replicate fits (cross-validation,
bootstrap) sharing one datafit run in parallel threads, and with
``error_model="numpy"``: a division by a risk-set or stratum sum that underflowed to zero
gives inf or NaN, never an exception from inside a kernel; the solver ends a fit whose
state is not finite with a message saying where (:func:`riskset.solver.ending.state_problem`).
"""
