"""The bottom layer: the datafit interface, the penalty and the compiled step and sweep.

Everything above (kernels, models, the solver, selection) imports from here; nothing
here imports from them.
"""
