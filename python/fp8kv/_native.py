"""libfp8kv_py through ctypes: the C judge, encoder and decoder the package forwards to."""
import ctypes
import operator
import os
import pathlib

ABI_VERSION = 6
_HERE = pathlib.Path(__file__).resolve().parent


class Fp8kvError(Exception):
    """Bad input: vectors that do not verify, an unknown profile or case, a wrong-sized buffer."""


def _load():
    path = os.environ.get("FP8KV_PY_LIB") or str(_HERE / "_lib" / "libfp8kv_py.so")
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(f"fp8kv: cannot load the judge library {path}: {e} "
                          "(install the package with `pip install ./python` from a checkout)")
    c = ctypes
    sig = {
        "fp8kv_py_abi_version": (c.c_int, []),
        "fp8kv_py_last_error": (c.c_char_p, []),
        "fp8kv_py_free": (None, [c.c_void_p]),
        "fp8kv_py_name": (c.c_char_p, [c.c_char_p, c.c_int]),
        "fp8kv_py_default": (c.c_char_p, [c.c_char_p]),
        "fp8kv_py_case_count": (c.c_int, [c.c_char_p, c.c_char_p, c.POINTER(c.c_int)]),
        "fp8kv_py_case_json": (c.c_void_p, [c.c_char_p, c.c_char_p, c.c_int]),
        "fp8kv_py_case_file": (c.c_void_p, [c.c_char_p, c.c_char_p, c.c_int, c.c_char_p,
                                            c.POINTER(c.c_size_t)]),
        "fp8kv_py_judge_kv": (c.c_int, [
            c.c_char_p, c.c_char_p, c.c_int, c.c_char_p,
            c.c_void_p, c.c_size_t, c.c_void_p, c.c_size_t,
            c.c_void_p, c.c_size_t, c.c_void_p, c.c_size_t,
            c.c_void_p, c.c_size_t, c.c_int, c.c_void_p, c.c_size_t, c.c_char_p,
            c.POINTER(c.c_int), c.POINTER(c.c_void_p), c.POINTER(c.c_void_p)]),
        "fp8kv_py_arithmetic": (c.c_int, [c.c_char_p, c.POINTER(c.c_int), c.POINTER(c.c_int),
                                          c.c_char_p, c.c_size_t]),
        "fp8kv_py_suite_count": (c.c_int, []),
        "fp8kv_py_suite_case_json": (c.c_void_p, [c.c_char_p, c.c_char_p, c.c_int]),
        "fp8kv_py_suite_array": (c.c_void_p, [c.c_char_p, c.c_char_p, c.c_int, c.c_char_p,
                                              c.POINTER(c.c_size_t)]),
        "fp8kv_py_suite_reference": (c.c_int, [
            c.c_char_p, c.c_char_p, c.c_int, c.c_char_p, c.c_void_p, c.c_void_p, c.c_void_p,
            c.c_size_t]),
        "fp8kv_py_judge_suite": (c.c_int, [
            c.c_char_p, c.c_char_p, c.c_int, c.c_char_p, c.c_void_p, c.c_size_t, c.c_char_p,
            c.POINTER(c.c_int), c.POINTER(c.c_void_p), c.POINTER(c.c_void_p)]),
        "fp8kv_py_encode": (c.c_int, [c.c_char_p, c.c_char_p, c.c_float, c.c_void_p, c.c_size_t,
                                      c.c_void_p]),
        "fp8kv_py_decode": (c.c_int, [c.c_char_p, c.c_float, c.c_void_p, c.c_size_t,
                                      c.c_void_p]),
    }
    for name, (restype, argtypes) in sig.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    if lib.fp8kv_py_abi_version() != ABI_VERSION:
        raise ImportError(f"fp8kv: {path} has ABI {lib.fp8kv_py_abi_version()}, "
                          f"this package needs {ABI_VERSION}: reinstall it")
    return lib


lib = _load()


def check(rc):
    """Raises Fp8kvError with the library's message when rc is not 0."""
    if rc != 0:
        raise Fp8kvError(lib.fp8kv_py_last_error().decode(errors="replace"))


def text(value, what):
    """value (a str) as bytes for the C side; Fp8kvError naming `what` for anything else, and
    for a str holding a NUL (C would read only what comes before it)."""
    if not isinstance(value, str):
        raise Fp8kvError(f"{what} must be a name (a str), not {value!r}")
    if "\0" in value:
        raise Fp8kvError(f"{what} {value!r} holds a NUL character")
    return value.encode()


def take_string(ptr):
    """The text of a malloc'd C string, which is then freed."""
    if not ptr:
        raise Fp8kvError(lib.fp8kv_py_last_error().decode(errors="replace"))
    try:
        return ctypes.string_at(ptr).decode()
    finally:
        lib.fp8kv_py_free(ptr)


def take_bytes(ptr, n):
    """The n bytes of a malloc'd C buffer, which is then freed."""
    if not ptr:
        raise Fp8kvError(lib.fp8kv_py_last_error().decode(errors="replace"))
    try:
        return ctypes.string_at(ptr, n)
    finally:
        lib.fp8kv_py_free(ptr)


# a case index goes to C as an int: anything past its range is no case, never another one
INT_MAX = 2**31 - 1


def case_index(index):
    """index as a Python int (anything operator.index takes), or Fp8kvError: a bool, a float
    or a str is no case index. The caller refuses what C's int cannot hold (past INT_MAX)."""
    if isinstance(index, bool):
        raise Fp8kvError(f"case index {index!r}: give an int")
    try:
        index = operator.index(index)
    except TypeError:
        raise Fp8kvError(f"case index {index!r}: give an int") from None
    return index


def c_index(index):
    """A case index as the C side takes it (an int): case_index's checks, and Fp8kvError for
    one C's int cannot hold, which would reach C as another case. Every index crossing to C
    goes through here, a case object's too (its attribute may have been changed)."""
    index = case_index(index)
    if not 0 <= index <= INT_MAX:
        raise Fp8kvError(f"unknown case {index}: a case index is 0..{INT_MAX} at most")
    return index


def names(table):
    """The names of one of the C library's name tables ("profile", "kernel_model", "dtype",
    "layout", "scale_granularity", ...: fp8kv_py_name), in its order, as a tuple."""
    out = []
    while (name := lib.fp8kv_py_name(table.encode(), len(out))) is not None:
        out.append(name.decode())
    if not out:
        raise ImportError(f"fp8kv: the judge library has no name table {table!r}: reinstall")
    return tuple(out)


def default(what):
    """The name of one of the C library's defaults ("profile", "model", ...: fp8kv_py_default)."""
    value = lib.fp8kv_py_default(what.encode())
    if value is None:
        raise ImportError(f"fp8kv: the judge library has no default {what!r}: reinstall")
    return value.decode()


def or_list(names, quote=""):
    """names as words: "a, b or c" (each name between quote marks)."""
    words = [f"{quote}{n}{quote}" for n in names]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def profiles():
    """The profile names, in the table's order."""
    return list(names("profile"))
