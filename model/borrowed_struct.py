"""A numba StructRef whose fields kernels compiled without reference counting (`_nrt=False`) can read.

numba's own StructRef (`numba.experimental.structref.register`) finds a field through the runtime's
`meminfo_data`, which refuses to compile where reference counting is off; where it is on, every field read
counts the field's arrays in and out: two atomic operations per array per read, which for the search rank's
transitions (model/roles/core.py; small functions each reading a few of the core's ~70 arrays) were most of
what a hop cost on top of the tree work. `register_borrowed` gives a StructRef type the same fields with
accessors that find the payload directly: in a kernel compiled with `_nrt=False` a field read is a load,
in any other it counts references as numba's does.

Rules for `_nrt=False` kernels (numba does not check them): they allocate nothing, return no array (or other
counted value) to a caller that counts references, call no counting function that returns one, and are not
called from Python (their wrapper would keep a reference to every argument): a Python-facing kernel is a
counting function that calls the `_nrt=False` body.
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils, imputils
from numba.core.datamodel import default_manager, models
from numba.core.extending import infer_getattr, lower_getattr_generic, lower_setattr_generic
from numba.core.typing.templates import AttributeTemplate

# numba's NRT_MemInfo (numba/core/runtime/nrt.cpp) begins refct, dtor, dtor_info, data: the payload pointer
# is its fourth word
_MEMINFO_HEAD = ir.LiteralStructType([cgutils.intp_t, cgutils.voidptr_t, cgutils.voidptr_t, cgutils.voidptr_t])


def _payload(context, builder, typ, val):
    """The struct proxy of a StructRef value's payload, found without the runtime."""
    ref = cgutils.create_struct_proxy(typ)(context, builder, value=val)
    head = builder.bitcast(ref.meminfo, _MEMINFO_HEAD.as_pointer())
    data = builder.load(cgutils.gep_inbounds(builder, head, 0, 3))
    payload_type = typ.get_data_type()
    data = builder.bitcast(data, context.data_model_manager[payload_type].get_value_type().as_pointer())
    return cgutils.create_struct_proxy(payload_type)(context, builder, ref=data)


def register_borrowed(struct_typeclass):
    """Register a `types.StructRef` subclass (as `structref.register` does) with field accessors that work in
    kernels compiled with `_nrt=False`. Use with `structref.define_proxy` as usual."""
    default_manager.register(struct_typeclass, models.StructRefModel)

    @infer_getattr
    class _Attribute(AttributeTemplate):
        key = struct_typeclass

        def generic_resolve(self, typ, attr):
            return typ.field_dict.get(attr)

    @lower_getattr_generic(struct_typeclass)
    def _getattr(context, builder, typ, val, attr):
        value = getattr(_payload(context, builder, typ, val), attr)
        # counts a reference only where the kernel counts them (context.enable_nrt)
        return imputils.impl_ret_borrowed(context, builder, typ.field_dict[attr], value)

    @lower_setattr_generic(struct_typeclass)
    def _setattr(context, builder, sig, args, attr):
        typ, value_type = sig.args
        instance, value = args
        payload = _payload(context, builder, typ, instance)
        value = context.cast(builder, value, value_type, typ.field_dict[attr])
        old = getattr(payload, attr)
        if context.enable_nrt:
            context.nrt.incref(builder, value_type, value)
            context.nrt.decref(builder, value_type, old)  # after the incref: the new value may be the old
        setattr(payload, attr, value)

    return struct_typeclass
