"""CRC-32C (Castagnoli), as TensorFlow's files use it: TFRecord records (masked) and tensor
bundles (checkpoints: each tensor's checksum, masked in its entry).

google-crc32c computes it (SSE4.2 / C, ~6 GB/s here; a pure-Python ~12 MB/s loop made a TFRecord
file checksum-bound), with its own pure-Python fallback where no wheel fits.

>>> hex(crc32c(b"123456789")), unmask(mask(0x12345678)) == 0x12345678
('0xe3069283', True)
"""

MASK_DELTA = 0xA282EAD8


_CHUNK = 1 << 20


def crc32c(data, crc=0):
    """The CRC-32C of ``data`` (bytes, or any buffer: an array's memory is read in 1 MiB
    copies, as google-crc32c takes only bytes), continuing from ``crc``."""
    import google_crc32c  # here: `import zps` does not load it
    if isinstance(data, bytes):
        return google_crc32c.extend(crc, data)
    view = memoryview(data).cast("B")
    for start in range(0, len(view), _CHUNK):
        crc = google_crc32c.extend(crc, bytes(view[start:start + _CHUNK]))
    return crc


def mask(crc):
    """TensorFlow's masked form of a CRC (stored next to data that may itself hold CRCs)."""
    return (((crc >> 15) | (crc << 17)) + MASK_DELTA) & 0xFFFFFFFF


def unmask(masked):
    """The CRC whose masked form is ``masked``."""
    rot = (masked - MASK_DELTA) & 0xFFFFFFFF
    return ((rot >> 17) | (rot << 15)) & 0xFFFFFFFF


def masked_crc32c(data):
    """TFRecord's masked CRC-32C of ``data``."""
    return mask(crc32c(data))
