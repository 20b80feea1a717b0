"""Fused expressions (hxarray.fuse, backends/fusion.py) as CUDA C: one statement per step, each the
C expression `_ops` declares for its operation, between the conversions the element-wise kernels
make (operands to the compute type, the result to the step's dtype). The same statements become
a CUDA kernel (the element-wise kernels' operand, layout and grid-stride conventions) and a host
C++ loop for the CPU backend (`host_source`, compiled by the simulator's host compiler).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence

from ... import _dtypes as dt
from ..._ops import OPS, REDUCTIONS, Op, Reduction, computes_in
from ..fusion import ARRAY, ASTYPE, SCALAR, Expression, Step
from . import C_TYPES, OPTIONS, PREAMBLE
from .elementwise import INDEX_TYPES, functor
from .elementwise import source as operation_source
from .reduction import functor as functor_name

__all__ = ["all_sources", "cuda_source", "host_source", "host_sum_source", "kernel_name",
           "reduce_kernel_name", "reduce_source"]


def _operations(*expressions: Expression) -> list[Op]:
    """The operations the expressions apply (a selection aside: it is inline), each once, in
    order."""
    ops: list[Op] = []
    for expression in expressions:
        for step in expression.steps[expression.operands:]:
            if step.op.__class__ is Op and not step.op.selects and step.op not in ops:
                ops.append(step.op)
    return ops


def _functors(*expressions: Expression) -> str:
    """The functor of every operation used (elementwise.source's, one source of each)."""
    parts = []
    for op in _operations(*expressions):
        text = operation_source(op)
        parts.append(text[text.index("namespace hx"):])
    return "".join(parts)


def statements(expression: Expression, load: Callable[[int, Step], str]) -> list[str]:
    """C statements computing `v<k>` for every step k; `load(k, step)` reads operand k (in its
    dtype). The last step is the result."""
    lines = []
    for k, step in enumerate(expression.steps):
        t = C_TYPES[step.dtype]
        if step.op in (ARRAY, SCALAR):
            lines.append(f"const {t} v{k} = {load(k, step)};")
            continue
        c = C_TYPES[computes_in(step.op, step.compute) if step.op.__class__ is Op else
                    step.compute]
        args = [f"hx::cast<{c}>(v{a})" for a in step.args]
        if step.op == ASTYPE:
            value = f"v{step.args[0]}"
        elif step.op.selects:
            value = f"(hx::cast<bool>(v{step.args[0]}) ? {args[1]} : {args[2]})"
        else:
            value = f"{functor(step.op)}::apply({', '.join(args)})"
        lines.append(f"const {t} v{k} = hx::cast<{t}>({value});")
    return lines


def key(expression: Expression) -> str:
    """A short name for the expression's kernels (a digest of its steps)."""
    text = repr([(getattr(s.op, "name", s.op), s.args, s.dtype.name, s.compute.name)
                 for s in expression.steps])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def kernel_name(expression: Expression, index: str) -> str:
    return f"hx::fused_{key(expression)}<{index}>"


def _locate(places: Sequence[tuple[str, str, str]]) -> str:
    """C statements adding to each offset `at` (declared 0) the byte offset of element `i` of its
    array: `places` are (offset, the Operand or Output with its strides, its C type); `i` and
    `shape` in scope. By number where the launch is contiguous, else by coordinates."""
    contiguous = "\n            ".join(f"{at} = i64(i) * i64(sizeof({t}));" for at, _, t in places)
    strided = "\n                    ".join(f"{at} += coordinate * {x}.strides.step[d];"
                                          for at, x, _ in places)
    return (f"        if (shape.contiguous != HX_STRIDED) {{\n"
            f"            {contiguous}\n"
            f"        }} else {{\n"
            f"            Index rest = i;\n"
            f"#pragma unroll\n"
            f"            for (int d = HX_MAX_DIMS - 1; d >= 0; --d) {{\n"
            f"                if (d < shape.ndim) {{\n"
            f"                    i64 coordinate;\n"
            f"                    if (d == 0) {{\n"
            f"                        coordinate = i64(rest);\n"
            f"                    }} else {{\n"
            f"                        const Index e = Index(shape.extent[d]);\n"
            f"                        const Index q = rest / e;\n"
            f"                        coordinate = i64(rest - q * e);\n"
            f"                        rest = q;\n"
            f"                    }}\n"
            f"                    {strided}\n"
            f"                }}\n"
            f"            }}\n"
            f"        }}\n")


def cuda_source(expression: Expression) -> str:
    """The kernel `hx::fused_<key><Index>`(operands..., Output, Shape): the element-wise kernels'
    parameters and layouts (elementwise.cuh), one Operand per operand of the expression (a
    scalar is an Operand without data); a grid-stride loop that never steps past the end, each
    element found by its number (contiguous layouts) or its coordinates (strided ones)."""
    n = expression.operands
    types = [C_TYPES[step.dtype] for step in expression.steps[:n]]
    params = "".join(f"const __grid_constant__ Operand x{k}, " for k in range(n))

    def load(k: int, step: Step) -> str:
        return f"load_one<{types[k]}>(x{k}, at{k})"

    body = "\n        ".join(statements(expression, load))
    last = len(expression.steps) - 1
    out = C_TYPES[expression.dtype]
    offsets = ", ".join(f"at{k} = 0" for k in range(n))
    locate = _locate([("at", "out", out), *((f"at{k}", f"x{k}", types[k]) for k in range(n))])
    return (f"{PREAMBLE}#include \"elementwise.cuh\"\n{_functors(expression)}"
            f"namespace hx {{\n"
            f"template <typename Index>\n"
            f"__global__ void fused_{key(expression)}({params}"
            f"const __grid_constant__ Output out, const __grid_constant__ Shape shape) {{\n"
            f"    const Index size = Index(shape.size);\n"
            f"    const Index stride = Index(gridDim.x) * Index(blockDim.x);\n"
            f"    for (Index i = Index(blockIdx.x) * Index(blockDim.x) + Index(threadIdx.x);\n"
            f"         i < size; i = next_index(i, stride, size)) {{\n"
            f"        i64 at = 0, {offsets};\n"
            f"{locate}"
            f"        {body}\n"
            f"        *reinterpret_cast<{out}*>(out.data + at) = v{last};\n"
            f"    }}\n"
            f"}}\n}}  // namespace hx\n")


def reduce_key(op: Reduction, acc: dt.DType, expression: Expression,
               after: Expression | None) -> str:
    """A short name for a fused reduction's kernel."""
    text = f"{op.name}/{acc.name}/{key(expression)}/{after and key(after)}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def reduce_kernel_name(op: Reduction, acc: dt.DType, expression: Expression,
                       after: Expression | None, index: str) -> str:
    return f"hx::fused_reduce_{reduce_key(op, acc, expression, after)}<{index}>"


def reduce_source(op: Reduction, acc: dt.DType, expression: Expression,
                  after: Expression | None) -> str:
    """The kernel `hx::fused_reduce_<key><Index>`(operands..., after's operands..., x, out,
    layout, shape): the reduction `op` accumulated in `acc` (reduction.cuh's kernel body, its
    functor's start and combine) over the expression's values, each computed where the
    reduction reads it. The first pass reads a virtual array at x (any address): the layout's
    strides are those of a C-contiguous array of 1-byte elements of the expression's shape, so
    that an element's offset from x is its C-order number, from which each operand's element is
    found as in `cuda_source` (by number where every operand is contiguous, else by
    coordinates); a second pass (split rows) reads the partial values at x. With
    `after` (an element-wise expression whose array operand is the reduction's result and whose
    others are scalars), each result goes through it before it is stored."""
    n = expression.operands
    types = [C_TYPES[step.dtype] for step in expression.steps[:n]]
    fields = "".join(f"    const Operand& x{k};\n" for k in range(n))
    offsets = ", ".join(f"at{k} = 0" for k in range(n))
    body = "\n        ".join(statements(
        expression, lambda k, step: f"load_one<{types[k]}>(x{k}, at{k})"))
    last = len(expression.steps) - 1
    accumulator = C_TYPES[computes_in(op, acc)]  # the functor's Value (float16's: float)
    out_type, epilogue = C_TYPES[acc], f"return hx::cast<{C_TYPES[acc]}>(v);"
    after_fields = after_params = after_names = ""
    if after is not None:
        m = after.operands
        after_fields = "".join(f"    const Operand& y{k};\n" for k in range(m))
        after_params = "".join(f"const __grid_constant__ Operand y{k}, " for k in range(m))
        after_names = "".join(f", y{k}" for k in range(m))
        out_type = C_TYPES[after.dtype]
        lines = statements(after, lambda k, step: f"hx::cast<{C_TYPES[step.dtype]}>(v)"
                           if step.op == ARRAY else f"load_one<{C_TYPES[step.dtype]}>(y{k}, 0)")
        epilogue = "\n        ".join([*lines, f"return v{len(after.steps) - 1};"])
    reducer = functor_name(op, acc, acc)
    tag = reduce_key(op, acc, expression, after)
    functors = _functors(expression, *(() if after is None else (after,)))
    return (f"{PREAMBLE}#include \"elementwise.cuh\"\n#include \"reduction.cuh\"\n{functors}"
            f"namespace hx {{\n"
            f"template <typename Index>\n"
            f"struct FusedRow_{tag} : {reducer} {{\n"
            f"    typedef {out_type} Out;\n"
            f"    const char* base;\n"
            f"    const Shape& shape;\n"
            f"{fields}{after_fields}"
            f"    __device__ __forceinline__ {accumulator} load(const char* p, i64) const {{\n"
            f"        const Index i = Index(p - base);\n"
            f"        i64 {offsets};\n"
            f"{_locate([(f'at{k}', f'x{k}', types[k]) for k in range(n)])}"
            f"        {body}\n"
            f"        return hx::cast<{accumulator}>(v{last});\n"
            f"    }}\n"
            f"    __device__ __forceinline__ Out result({accumulator} v) const {{\n"
            f"        {epilogue}\n"
            f"    }}\n"
            f"}};\n"
            f"template <typename Index>\n"
            f"__global__ void __launch_bounds__(HX_REDUCE_BLOCK, HX_REDUCE_MIN_BLOCKS)\n"
            f"fused_reduce_{tag}("
            + "".join(f"const __grid_constant__ Operand x{k}, " for k in range(n)) +
            f"{after_params}const char* __restrict__ x, char* __restrict__ out, "
            f"const __grid_constant__ ReduceLayout layout, "
            f"const __grid_constant__ Shape shape) {{\n"
            f"    const FusedRow_{tag}<Index> op{{{{}}, x, shape"
            + "".join(f", x{k}" for k in range(n)) + f"{after_names}}};\n"
            f"    reduce_rows(op, x, out, layout);\n"
            f"}}\n}}  // namespace hx\n")


def _scalar_loads(steps: Sequence[Step], n: int, pointers: str) -> str:
    """The host loop's declarations of the scalar operands among the first `n` steps, each read
    from its pointer in the C++ array `pointers`."""
    return "".join(f"    const {C_TYPES[steps[k].dtype]} s{k} = "
                   f"*reinterpret_cast<const {C_TYPES[steps[k].dtype]}*>({pointers}[{k}]);\n"
                   for k in range(n) if steps[k].op == SCALAR)


def _dense_operand(k: int, step: Step) -> str:
    """Operand k of a host loop's element j: its scalar, or element j of its typed pointer."""
    return f"s{k}" if step.op == SCALAR else f"q{k}[j]"


def host_source(expression: Expression) -> str:
    """C++ for the CPU: `hx_fused(args)` computes the elements [start, stop) (C order) of a
    2-D layout n0 x n1; args are int64s: a pointer per operand, out, n1, stop, start, n0, out's
    two byte strides, two byte strides per operand (a scalar has 0, 0). (One argument: a call
    from Python costs a fraction of eight; what changes between calls comes first.) Where every
    array operand and the output step by one element along the inner axis, the inner loop is a
    plain indexed loop the compiler vectorises."""
    steps = expression.steps
    n = expression.operands
    out = C_TYPES[expression.dtype]
    arrays = [k for k in range(n) if steps[k].op == ARRAY]

    def strided(k: int, step: Step) -> str:
        t = C_TYPES[step.dtype]
        if step.op == SCALAR:
            return f"s{k}"
        return f"*reinterpret_cast<const {t}*>(p{k} + j * st{k})"

    last = len(steps) - 1
    scalars = _scalar_loads(steps, n, "in")
    pointers = "".join(f"        const char* p{k} = in[{k}] + i0 * st[{2 * k}] + i1 * "
                       f"st[{2 * k + 1}];\n        const long long st{k} = st[{2 * k + 1}];\n"
                       for k in arrays)
    contiguous = " && ".join([f"ost1 == {expression.dtype.itemsize}"] +
                             [f"st{k} == {steps[k].dtype.itemsize}" for k in arrays])
    typed = "".join(f"            const {C_TYPES[steps[k].dtype]}* q{k} = "
                    f"reinterpret_cast<const {C_TYPES[steps[k].dtype]}*>(p{k});\n"
                    for k in arrays)
    dense_body = "\n                ".join(statements(expression, _dense_operand))
    strided_body = "\n                ".join(statements(expression, strided))
    return (f"{PREAMBLE}#include \"elementwise.cuh\"\n{_functors(expression)}"
            'extern "C" void hx_fused(const long long* args) {\n'
            f"    const char* in[{max(n, 1)}];\n"
            f"    for (int k = 0; k < {n}; k++) in[k] = reinterpret_cast<const char*>(args[k]);\n"
            f"    char* const out = reinterpret_cast<char*>(args[{n}]);\n"
            f"    const long long n1 = args[{n + 1}], stop = args[{n + 2}], "
            f"start = args[{n + 3}];\n"
            f"    const long long* const ost = args + {n + 5};\n"
            f"    const long long* const st = args + {n + 7};\n"
            f"{scalars}"
            "    for (long long at = start; at < stop;) {\n"
            "        const long long i0 = at / n1, i1 = at % n1;\n"
            "        const long long count = (stop - at < n1 - i1) ? stop - at : n1 - i1;\n"
            f"{pointers}"
            "        char* o = out + i0 * ost[0] + i1 * ost[1];\n"
            "        const long long ost1 = ost[1];\n"
            f"        if ({contiguous}) {{\n"
            f"{typed}"
            f"            {out}* r = reinterpret_cast<{out}*>(o);\n"
            "            for (long long j = 0; j < count; j++) {\n"
            f"                {dense_body}\n"
            f"                r[j] = v{last};\n"
            "            }\n"
            "        } else {\n"
            "            for (long long j = 0; j < count; j++) {\n"
            f"                {strided_body}\n"
            f"                *reinterpret_cast<{out}*>(o + j * ost1) = v{last};\n"
            "            }\n"
            "        }\n"
            "        at += count;\n"
            "    }\n"
            "}\n")


# numpy's pairwise summation (`pairwise_sum` of its loops_utils.h), step for step: runs of fewer
# than 8 elements added one by one from -0.0, runs of up to 128 into 8 accumulators combined in a
# fixed tree, longer runs halved at a multiple of 8. `f(i)` is element i.
_PAIRWISE = """
template <typename A, typename F> static A hx_pairwise(const F& f, long long i, long long n) {
    if (n < 8) {
        A res = -0.0;
        for (long long k = 0; k < n; k++) res += f(i + k);
        return res;
    }
    if (n <= 128) {
        A r[8];
        for (int m = 0; m < 8; m++) r[m] = f(i + m);
        long long k = 8;
        for (; k < n - (n % 8); k += 8)
            for (int m = 0; m < 8; m++) r[m] += f(i + k + m);
        A res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; k < n; k++) res += f(i + k);
        return res;
    }
    long long n2 = n / 2;
    n2 -= n2 % 8;
    return hx_pairwise<A>(f, i, n2) + hx_pairwise<A>(f, i + n2, n - n2);
}
"""


def host_sum_source(expression: Expression, total: dt.DType) -> str:
    """C++ for the CPU: `hx_fused_sum(args)` writes `*out` = `*initial` (where that pointer is
    not null) + the sum, in `total`, of the expression's elements [start, stop) of C-contiguous
    operands. A floating-point total (the expression's own dtype) adds numpy's pairwise way
    (`_PAIRWISE`), so that the sum is `np.add.reduce`'s of the same elements bit for bit; an
    integer total wraps around, as numpy's does in any order. args are int64s: a pointer per
    operand, out, initial, start, stop."""
    steps = expression.steps
    n = expression.operands
    acc = C_TYPES[total]
    last = len(steps) - 1
    scalars = _scalar_loads(steps, n, "args")
    typed = "".join(f"    const {C_TYPES[steps[k].dtype]}* const q{k} = "
                    f"reinterpret_cast<const {C_TYPES[steps[k].dtype]}*>(args[{k}]);\n"
                    for k in range(n) if steps[k].op == ARRAY)
    body = "\n        ".join(statements(expression, _dense_operand))
    if total in (dt.float32, dt.float64):
        sum_ = f"    {acc} sum = hx_pairwise<{acc}>(value, start, stop - start);\n"
    else:
        sum_ = ("    unsigned long long wrapped = 0;\n"
                "    for (long long j = start; j < stop; j++) "
                "wrapped += static_cast<unsigned long long>(value(j));\n"
                f"    {acc} sum = static_cast<{acc}>(wrapped);\n")
    return (f"{PREAMBLE}#include \"elementwise.cuh\"\n{_functors(expression)}{_PAIRWISE}"
            'extern "C" void hx_fused_sum(const long long* args) {\n'
            f"{scalars}{typed}"
            f"    {acc}* const out = reinterpret_cast<{acc}*>(args[{n}]);\n"
            f"    const {acc}* const initial = reinterpret_cast<const {acc}*>(args[{n + 1}]);\n"
            f"    const long long start = args[{n + 2}], stop = args[{n + 3}];\n"
            f"    auto value = [&](long long j) -> {acc} {{\n"
            f"        {body}\n"
            f"        return hx::cast<{acc}>(v{last});\n"
            "    };\n"
            f"{sum_}"
            "    *out = initial ? *initial + sum : sum;\n"
            "}\n")


# Representative expressions for `make cuda-check`: the benchmark's chain, a sum's input, a
# comparison feeding where, a cast, and mixed integer work.
def _samples() -> Iterator[Expression]:
    f64, f32, i32, i64, b = dt.float64, dt.float32, dt.int32, dt.int64, dt.bool

    def array(d: dt.DType) -> Step:
        return Step(ARRAY, (), d, d)

    def scalar(d: dt.DType) -> Step:
        return Step(SCALAR, (), d, d)

    def step(name: str, args: tuple[int, ...], d: dt.DType, compute: dt.DType) -> Step:
        return Step(OPS[name], args, d, compute)

    yield Expression((array(f64), array(f64), scalar(f64), scalar(f64),
                      step("multiply", (0, 0), f64, f64), step("multiply", (1, 1), f64, f64),
                      step("add", (4, 5), f64, f64), step("sqrt", (6,), f64, f64),
                      step("multiply", (7, 2), f64, f64), step("add", (8, 3), f64, f64)), 4)
    yield Expression((array(f32), array(f32), step("multiply", (0, 1), f32, f32)), 2)
    yield Expression((array(f64), scalar(f64), step("greater", (0, 1), b, f64),
                      step("negative", (0,), f64, f64), step("where", (2, 0, 3), f64, f64)), 2)
    yield Expression((array(i32), array(i64), Step(ASTYPE, (0,), i64, i32),
                      step("bitwise_xor", (2, 1), i64, i64), Step(ASTYPE, (3,), f32, i64),
                      step("exp", (4,), f32, f32)), 2)
    yield Expression((array(dt.complex128), step("abs", (0,), f64, dt.complex128),
                      step("log1p", (1,), f64, f64)), 1)


def _reduction_samples() -> Iterator[tuple[Reduction, dt.DType, Expression, Expression | None]]:
    """Fused reductions: each reduction over a sample's values (sum and prod in the default
    accumulators), numpy mode's +0 after a sum, and a mean's division (and +0)."""
    samples = list(_samples())
    f64, f32 = dt.float64, dt.float32
    r = REDUCTIONS
    yield r["sum"], f64, samples[0], None
    yield r["sum"], f32, samples[1], None
    yield r["prod"], f64, samples[0], None
    yield r["max"], f64, samples[2], None
    yield r["min"], f32, samples[3], None
    yield r["any"], dt.bool, samples[2], None
    yield r["all"], dt.bool, samples[4], None
    yield r["sum"], dt.int64, Expression((samples[3].steps[0], Step(OPS["multiply"], (0, 0),
                                                                 dt.int32, dt.int32)), 1), None
    plus_zero = Expression((Step(ARRAY, (), f64, f64), Step(SCALAR, (), f64, f64),
                            Step(OPS["add"], (0, 1), f64, f64)), 2)
    yield r["sum"], f64, samples[0], plus_zero
    mean = Expression((Step(ARRAY, (), f32, f32), Step(SCALAR, (), f32, f32),
                       Step(SCALAR, (), f32, f32), Step(OPS["divide"], (0, 1), f32, f32),
                       Step(OPS["add"], (3, 2), f32, f32)), 3)
    yield r["sum"], f32, samples[1], mean


def all_sources() -> Iterator[tuple[str, str, Sequence[str], Sequence[str]]]:
    """The fused kernels of a few representative expressions and reductions, for NVRTC."""
    for expression in _samples():
        names = [kernel_name(expression, index) for index in INDEX_TYPES]
        yield f"fused/{key(expression)}.cu", cuda_source(expression), OPTIONS, names
    for op, acc, expression, after in _reduction_samples():
        names = [reduce_kernel_name(op, acc, expression, after, index)
                 for index in INDEX_TYPES]
        yield (f"reduction/fused_{reduce_key(op, acc, expression, after)}.cu",
               reduce_source(op, acc, expression, after), OPTIONS, names)
