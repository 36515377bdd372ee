"""A software prefetch for kernels that visit rows of a large array in an order the hardware
cannot predict (a CSC column's rows of a row-state array: sweeps of the coordinate descent).

The out-of-order core holds only a few such rows' reads in flight when each row's update is
long (an exp, a division); asking for row ``indices[k + distance]`` while row ``indices[k]``
is updated keeps more of them on their way from memory. It is a hint: it changes no result.
"""
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

#: How many non-zeros ahead of the one being updated a kernel asks for its row (far enough to
#: hide a random read's latency behind a short loop's work: docs/performance.md).
DISTANCE = 16


@intrinsic
def prefetch(typingctx, array, row):
    """Hint that ``array[row, 0, ...]`` (``array[row]`` if 1-D) will be read soon
    (``llvm.prefetch``: a read, kept in every cache level). Arrays and integer rows only."""

    def codegen(context, builder, signature, args):
        array_type, row_type = signature.args
        view = context.make_array(array_type)(context, builder, args[0])
        index = [context.cast(builder, args[1], row_type, types.intp)]
        index += [context.get_constant(types.intp, 0)] * (array_type.ndim - 1)
        pointer = cgutils.get_item_pointer(context, builder, array_type, view, index, wraparound=False)
        byte_pointer = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        hint = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte_pointer, i32, i32, i32]), "llvm.prefetch.p0i8")
        builder.call(hint, [builder.bitcast(pointer, byte_pointer), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    if not isinstance(array, types.Array) or not isinstance(row, types.Integer):
        return None  # a typing error naming the arguments, not a wrong address
    return types.void(array, row), codegen
