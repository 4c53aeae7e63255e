"""TensorFlow's string hashes: FarmHash ``Fingerprint64``, ``FingerprintCat64`` and SipHash.

TF1 hashes strings into buckets with ``Fingerprint64(s) % num_buckets``
(``string_to_hash_bucket_fast``, hashed feature columns, vocabulary OOV buckets) and combines the
fingerprints of crossed features with ``FingerprintCat64``. Bucket ids are part of a trained
model (they index its embedding rows), so these are bit-exact ports of
``farmhash::Fingerprint64`` (farmhashna's ``Hash64``) and of
``tensorflow/core/platform/fingerprint.h``, in Python integer arithmetic masked to 64 bits.
``string_to_hash_bucket_strong`` uses keyed SipHash-2-4 (``strong_hash.h``) instead.

>>> from zps.ops.fingerprint import fingerprint64
>>> hex(fingerprint64(b""))
'0x9ae16a3b2f90404f'
"""

import struct

_MASK = (1 << 64) - 1
_K0 = 0xc3a5c85c97cb3127
_K1 = 0xb492b66fbe98f273
_K2 = 0x9ae16a3b2f90404f
_CAT_MUL = 0xc6a4a7935bd1e995


def _fetch64(s, i):
    return struct.unpack_from("<Q", s, i)[0]


def _fetch32(s, i):
    return struct.unpack_from("<I", s, i)[0]


def _rotate(v, shift):
    return ((v >> shift) | (v << (64 - shift))) & _MASK


def _shift_mix(v):
    return v ^ (v >> 47)


def _hash_len16(u, v, mul):
    a = ((u ^ v) * mul) & _MASK
    a ^= a >> 47
    b = ((v ^ a) * mul) & _MASK
    b ^= b >> 47
    return (b * mul) & _MASK


def _hash_len0to16(s, n):
    if n >= 8:
        mul = _K2 + n * 2
        a = (_fetch64(s, 0) + _K2) & _MASK
        b = _fetch64(s, n - 8)
        c = (_rotate(b, 37) * mul + a) & _MASK
        d = ((_rotate(a, 25) + b) * mul) & _MASK
        return _hash_len16(c, d, mul)
    if n >= 4:
        mul = _K2 + n * 2
        return _hash_len16(n + (_fetch32(s, 0) << 3), _fetch32(s, n - 4), mul)
    if n > 0:
        y = s[0] + (s[n >> 1] << 8)
        z = n + (s[n - 1] << 2)
        return (_shift_mix(((y * _K2) ^ (z * _K0)) & _MASK) * _K2) & _MASK
    return _K2


def _hash_len17to32(s, n):
    mul = _K2 + n * 2
    a = (_fetch64(s, 0) * _K1) & _MASK
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & _MASK
    d = (_fetch64(s, n - 16) * _K2) & _MASK
    return _hash_len16((_rotate((a + b) & _MASK, 43) + _rotate(c, 30) + d) & _MASK,
                       (a + _rotate((b + _K2) & _MASK, 18) + c) & _MASK, mul)


def _hash_len33to64(s, n):
    mul = _K2 + n * 2
    a = (_fetch64(s, 0) * _K2) & _MASK
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & _MASK
    d = (_fetch64(s, n - 16) * _K2) & _MASK
    y = (_rotate((a + b) & _MASK, 43) + _rotate(c, 30) + d) & _MASK
    z = _hash_len16(y, (a + _rotate((b + _K2) & _MASK, 18) + c) & _MASK, mul)
    e = (_fetch64(s, 16) * mul) & _MASK
    f = _fetch64(s, 24)
    g = ((y + _fetch64(s, n - 32)) * mul) & _MASK
    h = ((z + _fetch64(s, n - 24)) * mul) & _MASK
    return _hash_len16((_rotate((e + f) & _MASK, 43) + _rotate(g, 30) + h) & _MASK,
                       (e + _rotate((f + a) & _MASK, 18) + g) & _MASK, mul)


def _weak_hash_len32_with_seeds(s, i, a, b):
    w, x, y, z = struct.unpack_from("<4Q", s, i)
    a = (a + w) & _MASK
    b = _rotate((b + a + z) & _MASK, 21)
    c = a
    a = (a + x + y) & _MASK
    b = (b + _rotate(a, 44)) & _MASK
    return (a + z) & _MASK, (b + c) & _MASK


def fingerprint64(s):
    """FarmHash ``Fingerprint64`` of the bytes ``s``: an unsigned 64-bit int."""
    n = len(s)
    if n <= 16:
        return _hash_len0to16(s, n)
    if n <= 32:
        return _hash_len17to32(s, n)
    if n <= 64:
        return _hash_len33to64(s, n)
    # Longer strings: 64-byte blocks into a 56-byte state (v, w, x, y, z), then the last 64 bytes.
    seed = 81
    y = (seed * _K1 + 113) & _MASK
    z = (_shift_mix((y * _K2 + 113) & _MASK) * _K2) & _MASK
    v0 = v1 = w0 = w1 = 0
    x = (seed * _K2 + _fetch64(s, 0)) & _MASK
    end = ((n - 1) // 64) * 64
    for i in range(0, end, 64):
        x = (_rotate((x + y + v0 + _fetch64(s, i + 8)) & _MASK, 37) * _K1) & _MASK
        y = (_rotate((y + v1 + _fetch64(s, i + 48)) & _MASK, 42) * _K1) & _MASK
        x ^= w1
        y = (y + v0 + _fetch64(s, i + 40)) & _MASK
        z = (_rotate((z + w0) & _MASK, 33) * _K1) & _MASK
        v0, v1 = _weak_hash_len32_with_seeds(s, i, (v1 * _K1) & _MASK, (x + w0) & _MASK)
        w0, w1 = _weak_hash_len32_with_seeds(s, i + 32, (z + w1) & _MASK,
                                             (y + _fetch64(s, i + 16)) & _MASK)
        z, x = x, z
    mul = _K1 + ((z & 0xff) << 1)
    i = n - 64
    w0 = (w0 + ((n - 1) & 63)) & _MASK
    v0 = (v0 + w0) & _MASK
    w0 = (w0 + v0) & _MASK
    x = (_rotate((x + y + v0 + _fetch64(s, i + 8)) & _MASK, 37) * mul) & _MASK
    y = (_rotate((y + v1 + _fetch64(s, i + 48)) & _MASK, 42) * mul) & _MASK
    x ^= (w1 * 9) & _MASK
    y = (y + v0 * 9 + _fetch64(s, i + 40)) & _MASK
    z = (_rotate((z + w0) & _MASK, 33) * mul) & _MASK
    v0, v1 = _weak_hash_len32_with_seeds(s, i, (v1 * mul) & _MASK, (x + w0) & _MASK)
    w0, w1 = _weak_hash_len32_with_seeds(s, i + 32, (z + w1) & _MASK,
                                         (y + _fetch64(s, i + 16)) & _MASK)
    z, x = x, z
    return _hash_len16((_hash_len16(v0, w0, mul) + _shift_mix(y) * _K0 + z) & _MASK,
                       (_hash_len16(v1, w1, mul) + x) & _MASK, mul)


def fingerprint_cat64(fp1, fp2):
    """TF's ``FingerprintCat64``: two unsigned 64-bit fingerprints combined into one."""
    result = fp1 ^ _CAT_MUL
    result ^= (_shift_mix((fp2 * _CAT_MUL) & _MASK) * _CAT_MUL) & _MASK
    result = (result * _CAT_MUL) & _MASK
    result = (_shift_mix(result) * _CAT_MUL) & _MASK
    return _shift_mix(result)


def _rotl(v, shift):
    return ((v << shift) | (v >> (64 - shift))) & _MASK


def _sip_rounds(v0, v1, v2, v3, rounds):
    for _ in range(rounds):
        v0 = (v0 + v1) & _MASK
        v1 = _rotl(v1, 13) ^ v0
        v0 = _rotl(v0, 32)
        v2 = (v2 + v3) & _MASK
        v3 = _rotl(v3, 16) ^ v2
        v0 = (v0 + v3) & _MASK
        v3 = _rotl(v3, 21) ^ v0
        v2 = (v2 + v1) & _MASK
        v1 = _rotl(v1, 17) ^ v2
        v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


def siphash(key, s):
    """SipHash-2-4 of the bytes ``s`` under ``key`` (two unsigned 64-bit ints): TF's
    ``StrongKeyedHash``."""
    k0, k1 = key
    v0, v1 = k0 ^ 0x736f6d6570736575, k1 ^ 0x646f72616e646f6d
    v2, v3 = k0 ^ 0x6c7967656e657261, k1 ^ 0x7465646279746573
    n = len(s)
    end = n - n % 8
    for i in range(0, end, 8):
        m = _fetch64(s, i)
        v3 ^= m
        v0, v1, v2, v3 = _sip_rounds(v0, v1, v2, v3, 2)
        v0 ^= m
    last = ((n & 0xff) << 56) | int.from_bytes(s[end:], "little")
    v3 ^= last
    v0, v1, v2, v3 = _sip_rounds(v0, v1, v2, v3, 2)
    v0 ^= last
    v2 ^= 0xff
    v0, v1, v2, v3 = _sip_rounds(v0, v1, v2, v3, 4)
    return v0 ^ v1 ^ v2 ^ v3
