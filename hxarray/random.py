"""Random numbers that are the same on every device: Philox4x64-10, numpy's `Philox` stream.

    rng = hxarray.random.default_rng(42)
    x = rng.standard_normal((1000, 3), device="cuda:0")

`default_rng(seed)` makes the key from `numpy.random.SeedSequence(seed)` as
`numpy.random.Philox` does, so the raw 64-bit words, `random()` in float64 and float32,
`uniform()` and `choice(..., p=...)` with replacement are numpy's `Generator(Philox(seed))` bit
for bit, and `bit_generator.state` has numpy's format and meaning. Element i of a request reads
words at a fixed place of the stream (no rejection loops), so the values depend on neither the
device, nor the threads, nor how a request is split: two calls of n/2 give the values of one call
of n. Where numpy consumes a variable number of words (bounded integers, ziggurat normals and
exponentials) hxarray has its own fixed-consumption methods, the same on every device
(docs/random.md):

- integers: two words W per value, low + floor(W (high - low) / 2**128) (bias below 2**-64);
- standard_normal: Box-Muller on two words, sqrt(-2 log u1) cos(2 pi u2);
- exponential: one word, -log(1 - u);

with hxarray's own log and cosine, written once and generated for every device. float32 normals
and exponentials are the float64 values rounded.

The module-level functions (`random`, `normal`, `integers`, ...) draw from a per-thread generator
that `seed()` resets.
"""

from __future__ import annotations

import builtins
import math
import operator
import struct
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _dtypes as dt
from . import _views
from ._array import Array
from ._checks import as_device, as_dtype
from .backends import philox as _rng
from .hal.device import Device

__all__ = ["Generator", "Philox", "choice", "default_rng", "exponential", "integers", "normal",
           "permutation", "rand", "randint", "randn", "random", "seed", "shuffle",
           "standard_normal", "uniform"]

WORDS = 1 << 258  # positions (4 x counter + lane) wrap with the 256-bit counter
_MASK64 = (1 << 64) - 1


def _bits(value: float) -> int:
    """A double's bits, as the kernels take their float parameters."""
    return int.from_bytes(struct.pack("<d", value), "little")


def _size(size: Any, function: str) -> tuple[int, ...]:
    """`size` (None: one value, an int, or a tuple of ints) as a shape."""
    if type(size) is int and size >= 0:  # the common call, first
        return (size,)
    if size is None:
        return ()
    try:
        shape = (operator.index(size),) if not isinstance(size, (tuple, list)) else tuple(
            operator.index(n) for n in size)
    except TypeError:
        raise TypeError(f"{function}(): size must be None, an int or a tuple of ints, "
                        f"got {size!r}") from None
    if any(n < 0 for n in shape):
        raise ValueError(f"{function}(): size must not be negative, got {size!r}")
    return shape


def _host_words(key: Sequence[int], position: int, count: int) -> np.ndarray:
    """`count` raw words from `position`, computed by the CPU backend (its compiled loop: a
    state dict's block, or numpy's buffered half of a word, in microseconds)."""
    cpu = Device("cpu")
    backend = cpu.backend
    out = backend.empty((count,), dt.uint64, cpu)
    backend.random_bits("raw", (key[0], key[1]), position, out, (0, 0))
    return np.array(backend.host_view(out))


# -- each draw's transform, dtype and parameters, checked (Generator and hxarray.dask) ------------
Plan = tuple[str, dt.DType, tuple[int, int]]


def _float(dtype: Any, function: str) -> dt.DType:
    dtype = as_dtype(dtype, function)
    if dtype not in (dt.float32, dt.float64):
        raise TypeError(f"{function}(): dtype must be float32 or float64, got {dtype}")
    return dtype


def _random_plan(dtype: Any) -> Plan:
    dtype = _float(dtype, "random")
    return ("random" if dtype is dt.float64 else "random32"), dtype, (0, 0)


def _uniform_plan(low: float, high: float, dtype: Any) -> Plan:
    dtype = _float(dtype, "uniform")
    low, high = float(low), float(high)
    if not math.isfinite(high - low):
        raise OverflowError("uniform(): high - low must be finite")
    return "uniform", dtype, (_bits(low), _bits(high - low))


def _integers_plan(low: int, high: int | None, dtype: Any, endpoint: bool) -> Plan:
    dtype = as_dtype(dtype, "integers")
    if dtype not in _rng.KINDS["integers"].dtypes:
        raise TypeError(f"integers(): dtype must be an integer dtype, got {dtype}")
    if high is None:
        low, high = 0, low
    try:
        low, high = operator.index(low), operator.index(high) + bool(endpoint)
    except TypeError:
        raise TypeError("integers(): low and high must be Python ints") from None
    if low >= high:
        raise ValueError(f"integers(): low >= high ({low} >= {high}{' + 1' * endpoint})")
    info = np.iinfo(dtype.numpy)
    if low < int(info.min):
        raise ValueError(f"integers(): low is out of bounds for {dtype}")
    if high - 1 > int(info.max):
        raise ValueError(f"integers(): high is out of bounds for {dtype}")
    return "integers", dtype, (low & _MASK64, (high - low) & _MASK64)


def _normal_plan(loc: float, scale: float, dtype: Any) -> Plan:
    dtype = _float(dtype, "normal")
    if scale < 0:
        raise ValueError("normal(): scale < 0")
    return "normal", dtype, (_bits(float(loc)), _bits(float(scale)))


def _exponential_plan(scale: float, dtype: Any) -> Plan:
    dtype = _float(dtype, "exponential")
    if scale < 0:
        raise ValueError("exponential(): scale < 0")
    return "exponential", dtype, (0, _bits(float(scale)))


class Philox:
    """numpy.random.Philox's stream (Philox4x64-10 from a SeedSequence): the same words, the
    same `state`, `advance` and `jumped`."""

    def __init__(self, seed: Any = None) -> None:
        if isinstance(seed, np.random.SeedSequence):
            sequence = seed
        else:
            try:
                sequence = np.random.SeedSequence(seed)
            except TypeError:
                raise TypeError(f"Philox(): seed must be None, an int, a sequence of ints or a "
                                f"SeedSequence, got {type(seed).__name__}") from None
            except ValueError as exc:
                raise ValueError(f"Philox(): seed: {exc}") from None
        self.seed_seq = sequence
        key = sequence.generate_state(2, np.uint64)
        self._key = (int(key[0]), int(key[1]))
        self._position = 4  # the next word: 4 x numpy's counter + buffer_pos
        self._fresh = True  # numpy's buffer still zeros (nothing drawn since seeding/advance)
        # numpy's buffered upper half of a word (float32): whether there is one, and its value
        # (which numpy keeps, and shows in `state`, after it was used), or the position of the
        # word it is the high half of (read when needed: a Philox block on the host costs more
        # than a small request)
        self._has_half, self._half, self._half_at = False, 0, -1
        self._lock = threading.Lock()

    def _take(self, words: int) -> int:
        """Reserve the next `words` words: their first position."""
        with self._lock:
            position = self._position
            if words:
                self._position = (position + words) % WORDS
                self._fresh = False
            return position

    def _uinteger(self) -> int:
        """numpy's uinteger (the lock held)."""
        if self._half_at >= 0:
            self._half = int(_host_words(self._key, self._half_at, 1)[0]) >> 32
            self._half_at = -1
        return self._half

    def _take_halves(self, count: int) -> tuple[int | None, int]:
        """Reserve `count` 32-bit halves as numpy's next_uint32 gives them: the buffered half
        (or None) and the position of the words that give the rest (low half first)."""
        with self._lock:
            half = self._uinteger() if self._has_half and count else None
            rest = count - (half is not None)
            self._has_half = self._has_half and not count
            position = self._position
            words = (rest + 1) // 2
            if words:
                self._position = (position + words) % WORDS
                self._fresh = False
                # numpy keeps the high half of its last word, used or not
                self._has_half = rest % 2 == 1
                self._half_at = (self._position - 1) % WORDS
            return half, position

    @property
    def state(self) -> dict[str, Any]:
        """numpy's Philox state dict (counter, key, buffer, buffer_pos, has_uint32,
        uinteger)."""
        with self._lock:
            position, fresh, has_half, half = (self._position, self._fresh, self._has_half,
                                               self._uinteger())
        pos = position & 3 or 4
        counter = ((position - pos) >> 2) % (1 << 256)
        buffer = (np.zeros(4, np.uint64) if fresh else
                  _host_words(self._key, 4 * counter, 4))
        return {"bit_generator": "Philox",
                "state": {"counter": np.array([(counter >> (64 * d)) & _MASK64
                                               for d in range(4)], np.uint64),
                          "key": np.array(self._key, np.uint64)},
                "buffer": buffer, "buffer_pos": pos, "has_uint32": int(has_half),
                "uinteger": half}

    @state.setter
    def state(self, value: dict[str, Any]) -> None:
        if not isinstance(value, dict) or value.get("bit_generator") != "Philox":
            raise ValueError("state must be a dict of a Philox bit generator's state")
        counter = sum(int(c) << (64 * d) for d, c in enumerate(value["state"]["counter"]))
        key = tuple(int(k) for k in value["state"]["key"])
        pos = int(value["buffer_pos"])
        buffer = np.asarray(value["buffer"], np.uint64)
        if not 0 <= pos <= 4 or (pos < 4 and not np.array_equal(
                buffer, _host_words(key, 4 * counter, 4))):
            raise ValueError("state: buffer must be the Philox block of the counter where "
                             "buffer_pos < 4")
        with self._lock:
            self._key = (key[0], key[1])
            self._position = (4 * counter + pos) % WORDS
            self._fresh = pos == 4 and not buffer.any()
            self._has_half = bool(value["has_uint32"])
            self._half, self._half_at = int(value["uinteger"]) & 0xFFFFFFFF, -1

    def advance(self, delta: int) -> Philox:
        """Add `delta` to the 256-bit counter and drop the buffered words, as numpy's
        Philox.advance (each counter value gives four words)."""
        delta = operator.index(delta)
        with self._lock:
            pos = self._position & 3 or 4
            counter = ((self._position - pos) >> 2) + delta
            self._position = (4 * counter + 4) % WORDS
            self._fresh, self._has_half, self._half, self._half_at = True, False, 0, -1
        return self

    def jumped(self, jumps: int = 1) -> Philox:
        """A copy advanced by jumps * 2**128 counter values (numpy's jumped)."""
        copy = Philox(self.seed_seq)
        copy.state = self.state
        return copy.advance(operator.index(jumps) * (1 << 128))

    def spawn(self, n_children: int) -> list[Philox]:
        """Independent bit generators from the seed sequence's children (numpy's spawn)."""
        return [Philox(s) for s in self.seed_seq.spawn(n_children)]

    def random_raw(self, size: Any = None, *, device: Any = None) -> Array:
        """The next raw 64-bit words (uint64)."""
        return Generator(self)._fill("random_raw", size, device, "raw", dt.uint64)


class Generator:
    """numpy's Generator API over `Philox`, with `device=` (None: the default device) and
    `dtype=` where they apply. Every draw is an hxarray array (`size=None`: a 0-d array)."""

    def __init__(self, bit_generator: Philox) -> None:
        if not isinstance(bit_generator, Philox):
            raise TypeError("Generator(): bit_generator must be an hxarray.random.Philox")
        self._bit_generator = bit_generator

    @property
    def bit_generator(self) -> Philox:
        return self._bit_generator

    def __repr__(self) -> str:
        return "Generator(Philox)"

    def spawn(self, n_children: int) -> list[Generator]:
        """Independent generators (numpy's Generator.spawn)."""
        return [Generator(b) for b in self._bit_generator.spawn(n_children)]

    def jumped(self, jumps: int = 1) -> Generator:
        """A generator on the stream 2**128 counter values ahead per jump (numpy's Philox
        jumped)."""
        return Generator(self._bit_generator.jumped(jumps))

    def _fill(self, function: str, size: Any, device: Any, kind: str, dtype: dt.DType,
              params: tuple[int, int] = (0, 0)) -> Array:
        """A new array of `size` filled by the transform `kind` from the next words."""
        shape = _size(size, function)
        target = as_device(device, function)
        backend = target.backend
        out = backend.empty(shape, dtype, target)
        n = out.size
        if kind == "random32":
            half, position = self._bit_generator._take_halves(n)
            if half is None:  # (even sizes, numpy's buffer empty: the common call)
                if n:
                    backend.random_bits(kind, self._bit_generator._key, position, out, params)
                return out
            flat = _views.flatten(out)
            backend.assign(_views.slice_axis(flat, 0, 0, 1), (half >> 8) * 2.0 ** -24)
            if n > 1:
                backend.random_bits(kind, self._bit_generator._key, position,
                                    _views.slice_axis(flat, 0, 1, n), params)
            return out
        position = self._bit_generator._take(_rng.KINDS[kind].words(n))
        if n:
            backend.random_bits(kind, self._bit_generator._key, position, out, params)
        return out

    def random(self, size: Any = None, dtype: Any = dt.float64, *, device: Any = None) -> Array:
        """Floats in [0, 1): numpy's values bit for bit (float64 from a word's top 53 bits,
        float32 from the top 24 bits of each 32-bit half)."""
        return self._fill("random", size, device, *_random_plan(dtype))

    def uniform(self, low: float = 0.0, high: float = 1.0, size: Any = None,
                dtype: Any = dt.float64, *, device: Any = None) -> Array:
        """low + (high - low) u, u in [0, 1): numpy's float64 values bit for bit (float32: those
        rounded)."""
        return self._fill("uniform", size, device, *_uniform_plan(low, high, dtype))

    def integers(self, low: int, high: int | None = None, size: Any = None,
                 dtype: Any = dt.int64, endpoint: bool = False, *, device: Any = None) -> Array:
        """Integers in [low, high) ([low, high] with `endpoint`; high=None: [0, low)), two words
        each: low + floor(W (high - low) / 2**128), bias below 2**-64."""
        return self._fill("integers", size, device, *_integers_plan(low, high, dtype, endpoint))

    def standard_normal(self, size: Any = None, dtype: Any = dt.float64, *,
                        device: Any = None) -> Array:
        """Standard normal values: Box-Muller on two words (hxarray's method, not numpy's
        ziggurat); float32 values are the float64 ones rounded."""
        return self.normal(0.0, 1.0, size, dtype, device=device)

    def normal(self, loc: float = 0.0, scale: float = 1.0, size: Any = None,
               dtype: Any = dt.float64, *, device: Any = None) -> Array:
        """loc + scale z for standard normal z (`standard_normal`)."""
        return self._fill("normal", size, device, *_normal_plan(loc, scale, dtype))

    def exponential(self, scale: float = 1.0, size: Any = None, dtype: Any = dt.float64, *,
                    device: Any = None) -> Array:
        """-scale log(1 - u), one word each (hxarray's method, not numpy's ziggurat)."""
        return self._fill("exponential", size, device, *_exponential_plan(scale, dtype))

    def _order(self, n: int, device: Any) -> Array:
        """A uniformly random permutation of range(n) (int64): the stable order of n raw
        words (ties, about n**2 / 2**65 likely, keep their order on every device)."""
        import hxarray as xp

        return xp.argsort(self._fill("permutation", n, device, "raw", dt.uint64), stable=True)

    def permutation(self, x: int | Array, axis: int = 0, *, device: Any = None) -> Array:
        """range(x) permuted, or a permuted copy of the array x along `axis`."""
        import hxarray as xp

        if isinstance(x, Array):
            order = self._order(x.shape[axis], x.device)
            return xp.take(x, order, axis=axis)
        return self._order(operator.index(x), device)

    def shuffle(self, x: Array, axis: int = 0) -> None:
        """Permute the array x along `axis`, in place."""
        import hxarray as xp

        if not isinstance(x, Array):
            raise TypeError("shuffle(): x must be an hxarray array")
        if x._readonly:
            raise ValueError("shuffle(): x is read-only")
        x[...] = xp.take(x, self._order(x.shape[axis], x.device), axis=axis)

    def choice(self, a: int | Array, size: Any = None, replace: bool = True,
               p: Sequence[float] | Array | None = None, *, device: Any = None) -> Array:
        """Samples of range(a), or of the array a along its first axis: with replacement
        (`integers`, or with `p` numpy's inverse CDF of `random`, the same as numpy's), or
        without (the first of a permutation, or with `p` the smallest exponential(1) / p)."""
        import hxarray as xp

        shape = _size(size, "choice")
        count = math.prod(shape)
        if isinstance(a, Array):
            if a.ndim == 0:
                raise ValueError("choice(): a must be 1-dimensional or an integer")
            n, device = a.shape[0], a.device
        else:
            try:
                n = operator.index(a)
            except TypeError:
                raise TypeError("choice(): a must be an int or an hxarray array") from None
            if n <= 0 and count:
                raise ValueError("choice(): a must be a positive integer unless no samples "
                                 "are taken")
        weights = None
        if p is not None:
            weights = np.asarray(p.to_device("cpu") if isinstance(p, Array) else p,
                                 np.float64)
            if weights.shape != (n,):
                raise ValueError("choice(): a and p must have same size")
            if not np.isfinite(weights).all() or (weights < 0).any():
                raise ValueError("choice(): probabilities p are not non-negative")
            if abs(math.fsum(weights) - 1) > math.sqrt(np.finfo(np.float64).eps):
                raise ValueError("choice(): probabilities p do not sum to 1")
        if replace:
            if weights is None:
                index = self.integers(0, max(n, 1), shape, device=device)
            else:
                cdf = np.cumsum(weights)
                cdf /= cdf[-1]
                index = xp.searchsorted(xp.asarray(cdf, device=device),
                                        self.random(shape, device=device), side="right")
                index = xp.astype(index, xp.int64)
        else:
            if count > n:
                raise ValueError("choice(): cannot take a larger sample than the population "
                                 "when replace is False")
            if weights is None:
                order = self._order(n, device)
            else:
                if np.count_nonzero(weights) < count:
                    raise ValueError("choice(): fewer non-zero entries in p than size")
                keys = self.exponential(1.0, n, device=device) / xp.asarray(weights,
                                                                             device=device)
                order = xp.argsort(keys, stable=True)
            index = xp.reshape(order[:count], shape)
        if not isinstance(a, Array):
            return index
        return xp.reshape(xp.take(a, xp.reshape(index, (-1,)), axis=0), (*shape, *a.shape[1:]))


def default_rng(seed: Any = None) -> Generator:
    """A Generator on Philox(seed): numpy's default_rng(seed) with Philox instead of PCG64
    (`numpy.random.Generator(numpy.random.Philox(seed))` draws the same raw words)."""
    if isinstance(seed, Generator):
        return seed
    return Generator(seed if isinstance(seed, Philox) else Philox(seed))


# -- numpy's module-level habits, on a per-thread generator --------------------------------------
_local = threading.local()


def _generator() -> Generator:
    generator = getattr(_local, "generator", None)
    if generator is None:
        generator = _local.generator = default_rng()
    return generator


def seed(seed: Any = None) -> None:
    """Reset this thread's generator of the module-level functions to default_rng(seed)."""
    _local.generator = default_rng(seed)


def random(size: Any = None, dtype: Any = dt.float64, *, device: Any = None) -> Array:
    """Generator.random on this thread's generator."""
    return _generator().random(size, dtype, device=device)


def rand(*shape: int, device: Any = None) -> Array:
    """Floats in [0, 1) of the given shape (numpy's rand)."""
    return _generator().random(shape, device=device)


def randn(*shape: int, device: Any = None) -> Array:
    """Standard normal values of the given shape (numpy's randn)."""
    return _generator().standard_normal(shape, device=device)


def standard_normal(size: Any = None, dtype: Any = dt.float64, *, device: Any = None) -> Array:
    """Generator.standard_normal on this thread's generator."""
    return _generator().standard_normal(size, dtype, device=device)


def normal(loc: float = 0.0, scale: float = 1.0, size: Any = None, dtype: Any = dt.float64, *,
           device: Any = None) -> Array:
    """Generator.normal on this thread's generator."""
    return _generator().normal(loc, scale, size, dtype, device=device)


def uniform(low: float = 0.0, high: float = 1.0, size: Any = None, dtype: Any = dt.float64, *,
            device: Any = None) -> Array:
    """Generator.uniform on this thread's generator."""
    return _generator().uniform(low, high, size, dtype, device=device)


def exponential(scale: float = 1.0, size: Any = None, dtype: Any = dt.float64, *,
                device: Any = None) -> Array:
    """Generator.exponential on this thread's generator."""
    return _generator().exponential(scale, size, dtype, device=device)


def integers(low: int, high: int | None = None, size: Any = None, dtype: Any = dt.int64,
             endpoint: builtins.bool = False, *, device: Any = None) -> Array:
    """Generator.integers on this thread's generator."""
    return _generator().integers(low, high, size, dtype, endpoint, device=device)


def randint(low: int, high: int | None = None, size: Any = None, dtype: Any = dt.int64, *,
            device: Any = None) -> Array:
    """Integers in [low, high) (numpy's randint): Generator.integers."""
    return _generator().integers(low, high, size, dtype, device=device)


def choice(a: int | Array, size: Any = None, replace: builtins.bool = True,
           p: Sequence[float] | Array | None = None, *, device: Any = None) -> Array:
    """Generator.choice on this thread's generator."""
    return _generator().choice(a, size, replace, p, device=device)


def permutation(x: int | Array, *, device: Any = None) -> Array:
    """Generator.permutation on this thread's generator."""
    return _generator().permutation(x, device=device)


def shuffle(x: Array) -> None:
    """Generator.shuffle on this thread's generator."""
    _generator().shuffle(x)
