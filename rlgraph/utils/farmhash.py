"""FarmHash `Fingerprint64` in pure Python: the 64-bit string fingerprint TensorFlow uses.

TensorFlow's `tf.strings.to_hash_bucket_fast(s, n)` is `Fingerprint64(s) % n`, where
`Fingerprint64` is FarmHash's "na" variant of `Hash64` (Geoff Pike's FarmHash,
https://github.com/google/farmhash, a successor of CityHash). Its output is fixed forever (it
is a *fingerprint*), so this port gives the same buckets as TensorFlow; PyTorch string layers
use it to hash text without TensorFlow.

The function reads the string's UTF-8 bytes in little-endian 64-bit (and 32-bit) words and
takes one of four paths by length: 0-16, 17-32, 33-64 bytes, or a loop over 64-byte blocks
for longer input. All arithmetic is modulo 2**64 (python ints masked with `_MASK`); `_rotr` is
a right rotation.

>>> fingerprint64("")
11160318154034397263
>>> to_hash_bucket_fast("hello", 1000) == fingerprint64("hello") % 1000
True
"""
from __future__ import annotations

from typing import Union

_MASK = 0xFFFFFFFFFFFFFFFF
# FarmHash's primes (shared with CityHash).
K0 = 0xC3A5C85C97CB3127
K1 = 0xB492B66FBE98F273
K2 = 0x9AE16A3B2F90404F
# The multiplier of the 128-to-64 bit mix (`Hash128to64`).
K_MUL = 0x9DDFEA08EB382D69
_SEED = 81


def _fetch64(data: bytes, i: int) -> int:
    return int.from_bytes(data[i:i + 8], "little")


def _fetch32(data: bytes, i: int) -> int:
    return int.from_bytes(data[i:i + 4], "little")


def _rotr(value: int, shift: int) -> int:
    return ((value >> shift) | (value << (64 - shift))) & _MASK


def _shift_mix(value: int) -> int:
    return value ^ (value >> 47)


def _hash_len16(u: int, v: int, mul: int = K_MUL) -> int:
    """Mixes two 64-bit words into one (`HashLen16`; with the default `mul` it is `Hash128to64`)."""
    a = ((u ^ v) * mul) & _MASK
    a ^= a >> 47
    b = ((v ^ a) * mul) & _MASK
    b ^= b >> 47
    return (b * mul) & _MASK


def _hash_len_0_to_16(s: bytes) -> int:
    n = len(s)
    if n >= 8:
        mul = K2 + n * 2
        a = (_fetch64(s, 0) + K2) & _MASK
        b = _fetch64(s, n - 8)
        c = (_rotr(b, 37) * mul + a) & _MASK
        d = ((_rotr(a, 25) + b) * mul) & _MASK
        return _hash_len16(c, d, mul)
    if n >= 4:
        mul = K2 + n * 2
        a = _fetch32(s, 0)
        return _hash_len16(n + (a << 3), _fetch32(s, n - 4), mul)
    if n > 0:
        # y and z are 32-bit values in the C code; they never overflow 32 bits here.
        y = s[0] + (s[n >> 1] << 8)
        z = n + (s[n - 1] << 2)
        return (_shift_mix(((y * K2) ^ (z * K0)) & _MASK) * K2) & _MASK
    return K2


def _hash_len_17_to_32(s: bytes) -> int:
    n = len(s)
    mul = K2 + n * 2
    a = (_fetch64(s, 0) * K1) & _MASK
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & _MASK
    d = (_fetch64(s, n - 16) * K2) & _MASK
    return _hash_len16((_rotr((a + b) & _MASK, 43) + _rotr(c, 30) + d) & _MASK,
                       (a + _rotr((b + K2) & _MASK, 18) + c) & _MASK, mul)


def _hash_len_33_to_64(s: bytes) -> int:
    n = len(s)
    mul = K2 + n * 2
    a = (_fetch64(s, 0) * K2) & _MASK
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & _MASK
    d = (_fetch64(s, n - 16) * K2) & _MASK
    y = (_rotr((a + b) & _MASK, 43) + _rotr(c, 30) + d) & _MASK
    z = _hash_len16(y, (a + _rotr((b + K2) & _MASK, 18) + c) & _MASK, mul)
    e = (_fetch64(s, 16) * mul) & _MASK
    f = _fetch64(s, 24)
    g = ((y + _fetch64(s, n - 32)) * mul) & _MASK
    h = ((z + _fetch64(s, n - 24)) * mul) & _MASK
    return _hash_len16((_rotr((e + f) & _MASK, 43) + _rotr(g, 30) + h) & _MASK,
                       (e + _rotr((f + a) & _MASK, 18) + g) & _MASK, mul)


def _weak_hash_len32_with_seeds(s: bytes, i: int, a: int, b: int) -> tuple:
    """A quick 128-bit hash of the 32 bytes at `i`, seeded with (a, b)."""
    w, x, y, z = (_fetch64(s, i + k) for k in (0, 8, 16, 24))
    a = (a + w) & _MASK
    b = _rotr((b + a + z) & _MASK, 21)
    c = a
    a = (a + x + y) & _MASK
    b = (b + _rotr(a, 44)) & _MASK
    return (a + z) & _MASK, (b + c) & _MASK


def _hash_long(s: bytes) -> int:
    """Over 64 bytes: 56 bytes of state (x, y, z, v, w) mixed with each 64-byte block."""
    n = len(s)
    x = _SEED
    y = (_SEED * K1 + 113) & _MASK
    z = (_shift_mix((y * K2 + 113) & _MASK) * K2) & _MASK
    v = (0, 0)
    w = (0, 0)
    x = (x * K2 + _fetch64(s, 0)) & _MASK
    # The loop covers whole blocks so that 1 to 64 bytes remain; the tail re-reads the last 64.
    end = ((n - 1) // 64) * 64
    last64 = n - 64
    i = 0
    while True:
        x = (_rotr((x + y + v[0] + _fetch64(s, i + 8)) & _MASK, 37) * K1) & _MASK
        y = (_rotr((y + v[1] + _fetch64(s, i + 48)) & _MASK, 42) * K1) & _MASK
        x ^= w[1]
        y = (y + v[0] + _fetch64(s, i + 40)) & _MASK
        z = (_rotr((z + w[0]) & _MASK, 33) * K1) & _MASK
        v = _weak_hash_len32_with_seeds(s, i, (v[1] * K1) & _MASK, (x + w[0]) & _MASK)
        w = _weak_hash_len32_with_seeds(s, i + 32, (z + w[1]) & _MASK, (y + _fetch64(s, i + 16)) & _MASK)
        z, x = x, z
        i += 64
        if i == end:
            break
    mul = K1 + ((z & 0xFF) << 1)
    i = last64
    w0 = (w[0] + ((n - 1) & 63)) & _MASK
    v0 = (v[0] + w0) & _MASK
    w0 = (w0 + v0) & _MASK
    v, w = (v0, v[1]), (w0, w[1])
    x = (_rotr((x + y + v[0] + _fetch64(s, i + 8)) & _MASK, 37) * mul) & _MASK
    y = (_rotr((y + v[1] + _fetch64(s, i + 48)) & _MASK, 42) * mul) & _MASK
    x ^= (w[1] * 9) & _MASK
    y = (y + v[0] * 9 + _fetch64(s, i + 40)) & _MASK
    z = (_rotr((z + w[0]) & _MASK, 33) * mul) & _MASK
    v = _weak_hash_len32_with_seeds(s, i, (v[1] * mul) & _MASK, (x + w[0]) & _MASK)
    w = _weak_hash_len32_with_seeds(s, i + 32, (z + w[1]) & _MASK, (y + _fetch64(s, i + 16)) & _MASK)
    z, x = x, z
    return _hash_len16((_hash_len16(v[0], w[0], mul) + _shift_mix(y) * K0 + z) & _MASK,
                       (_hash_len16(v[1], w[1], mul) + x) & _MASK, mul)


def fingerprint64(text: Union[str, bytes]) -> int:
    """FarmHash `Fingerprint64` (= farmhash "na" `Hash64`) of `text` (str is UTF-8 encoded).

    Args:
        text: The string or bytes to fingerprint.

    Returns:
        The fingerprint, an int in [0, 2**64).
    """
    s = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    n = len(s)
    if n <= 16:
        return _hash_len_0_to_16(s)
    if n <= 32:
        return _hash_len_17_to_32(s)
    if n <= 64:
        return _hash_len_33_to_64(s)
    return _hash_long(s)


def to_hash_bucket_fast(text: Union[str, bytes], num_buckets: int) -> int:
    """The bucket TensorFlow's `tf.strings.to_hash_bucket_fast` gives `text`: `fingerprint64(text) % num_buckets`."""
    return fingerprint64(text) % num_buckets
