"""The user's ``f`` and ``jac`` handed to a compiled stiff kernel as addresses of compiled code.

numba unboxes a first-class function argument by calling back into Python twice for it (its
compile result, then an LLVM symbol lookup: about 0.1 ms a solve, what a 100-step solve of a small
system spends stepping). A kernel takes instead four integers, taken once per compiled function
(:func:`function_addresses`), and rebuilds the first-class function values inside
(:func:`user_functions`): the same value numba's unboxing makes, so a call of ``f`` is the same
indirect call, with the user's exceptions propagating. The jac pair ``(0, 0)`` means no ``jac``
(:func:`is_present`: difference Jacobians, decided at run time, so each kernel compiles once for
both Jacobian modes).
"""

from __future__ import annotations

import weakref

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils
from numba.core.extending import intrinsic

from .common import CACHE, FIELD_SIGNATURE, FIELD_TYPE, JACOBIAN_SIGNATURE, JACOBIAN_TYPE

__all__ = ["ADDRESSES", "function_addresses", "user_functions", "is_present"]

ADDRESSES = 4  # f's (numba calling convention, C wrapper) addresses, then jac's


def _function_from_addresses(function_type):
    """An intrinsic ``(jit_address, c_address) -> function_type``."""

    @intrinsic
    def from_addresses(typingctx, jit_address, c_address):
        def codegen(context, builder, signature, args):
            value = cgutils.create_struct_proxy(function_type)(context, builder)
            voidptr = context.get_value_type(numba.types.voidptr)
            value.c_addr = builder.inttoptr(args[1], voidptr)
            value.py_addr = ir.Constant(voidptr, None)  # no Python object: never boxed
            if "jit_addr" in value._datamodel._fields:  # numba >= 0.59
                value.jit_addr = builder.inttoptr(args[0], voidptr)
            return value._getvalue()

        return function_type(numba.types.intp, numba.types.intp), codegen

    return from_addresses


_field_from_addresses = _function_from_addresses(FIELD_TYPE)
_jacobian_from_addresses = _function_from_addresses(JACOBIAN_TYPE)


@intrinsic
def is_present(typingctx, function):
    """Whether a first-class function value has code (False for None and the jac pair (0, 0))."""
    if isinstance(function, numba.types.NoneType):
        return numba.types.boolean(function), lambda context, builder, sig, args: ir.Constant(
            ir.IntType(1), 0
        )
    if not isinstance(function, numba.types.FunctionType):
        return None

    def codegen(context, builder, signature, args):
        value = cgutils.create_struct_proxy(function)(context, builder, value=args[0])
        return builder.not_(cgutils.is_null(builder, value.c_addr))

    return numba.types.boolean(function), codegen


@numba.njit(cache=CACHE, inline="always")
def user_functions(addresses):
    """``(f, jac)``, first-class functions, from :func:`function_addresses`' four integers."""
    f = _field_from_addresses(addresses[0], addresses[1])
    jac = _jacobian_from_addresses(addresses[2], addresses[3])
    return f, jac


# compiled function -> its (jit, C wrapper) addresses; compiled f -> {jac: the kernel's array}
_CACHE: "weakref.WeakKeyDictionary[object, tuple[int, int]]" = weakref.WeakKeyDictionary()
_ARRAYS: "weakref.WeakKeyDictionary[object, dict]" = weakref.WeakKeyDictionary()


def _addresses(function, signature) -> tuple[int, int]:
    found = _CACHE.get(function)
    if found is None:
        # numba's own helpers, the ones its unboxing of a first-class function calls
        from numba.experimental.function_type import _get_jit_address, _get_wrapper_address

        jit = int(_get_jit_address(function, signature))
        found = (jit, int(_get_wrapper_address(function, signature)))
        _CACHE[function] = found
    return found


def function_addresses(f, jac=None) -> np.ndarray:
    """The four integers a stiff kernel takes for ``f`` and ``jac``: numba functions compiled for
    :data:`.common.FIELD_SIGNATURE` / ``JACOBIAN_SIGNATURE`` (what
    :func:`~dynkit.solvers.compiled.compile_problem` makes); ``jac`` None: difference Jacobians.
    The caller keeps ``f`` and ``jac`` alive while the kernel runs."""
    try:
        found = _ARRAYS.get(f, {}).get(jac)
    except TypeError:  # jac unhashable: never cached
        found = None
    if found is None:
        of_jac = (0, 0) if jac is None else _addresses(jac, JACOBIAN_SIGNATURE)
        found = np.array((*_addresses(f, FIELD_SIGNATURE), *of_jac), dtype=np.int64)
        # shared by every solve of (f, jac): the kernels only read it (left writable: numba types a
        # read-only array apart, and the kernels' signatures take a writable one)
        try:
            _ARRAYS.setdefault(f, {})[jac] = found
        except TypeError:
            pass
    return found
