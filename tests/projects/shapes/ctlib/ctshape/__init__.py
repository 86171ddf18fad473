"""ctshape: a C library loaded with ctypes, whichever Python loads it."""

import ctypes
from pathlib import Path

_lib = ctypes.CDLL(str(Path(__file__).with_name("libctshape.so")))
_lib.ctshape_variant.restype = ctypes.c_char_p


def add(a: int, b: int) -> int:
    return _lib.ctshape_add(a, b)


def variant() -> str:
    return _lib.ctshape_variant().decode()
