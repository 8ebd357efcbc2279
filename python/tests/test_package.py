"""The fp8kv Python package: cases, the judge (the same verdicts as `fp8kv judge-kv`), planted
engine faults caught with the right class, exact encode/decode, arrays of every kind, and bad
input. Run from the repository root after `pip install ./python`:

    .venv/bin/python3 -m pytest python/tests examples/python
"""
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import fp8kv

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "python"))
import numpy_engine as engine  # noqa: E402

CLI = os.environ.get("FP8KV_CLI", str(ROOT / "build" / "conformance" / "fp8kv"))
OCP = [p for p in fp8kv.profiles() if p.startswith("e4m3fn_") and p != "e4m3fn_satfinite_infnan"]


def stored(case, faults=()):
    """What the numpy engine's store wrote: (key_cache, value_cache, key_scale_cache,
    value_scale_cache), the scale caches None unless the case has scales per token and head."""
    k, v = case.new_caches()
    ks, vs = case.new_scale_caches()
    engine.store(case.key, case.value, case.slot_mapping, k, v, *case.store_scales, case.layout,
                 case.profile, faults, ks, vs)
    return k, v, ks, vs


def test_cases_have_the_meta_fields_and_inputs():
    cases = fp8kv.kv_cases("e4m3fn_satfinite")
    assert len(cases) >= 4
    layouts = {c.layout for c in cases}
    assert layouts == {"nhd", "split_x", "hnd"}
    assert {c.block_size for c in cases} >= {16, 32, 64}
    for c in cases:
        assert c.key.shape == (c.num_tokens, c.num_heads, c.head_size)
        assert c.slot_mapping.shape == (c.num_tokens,) and c.slot_mapping.dtype == np.int64
        assert c.block_table.shape == (c.num_seqs, c.max_blocks_per_seq)
        assert c.query.shape == (c.num_seqs, c.num_q_heads, c.head_size)
        assert c.key_cache.size == c.cache_bytes and c.key_cache.shape == c.key_cache_shape
        assert c.softmax_scale > 0 and c.num_q_heads % c.num_heads == 0
        if c.scale_granularity == "tensor":
            assert c.k_scale > 0 and c.v_scale > 0 and c.k_head_scales is None
        else:
            assert np.isnan(c.k_scale) and np.isnan(c.v_scale)
        if c.scale_granularity == "head":
            assert c.k_head_scales.shape == (c.num_heads,) and (c.v_head_scales > 0).all()
        if c.scale_granularity == "token_head":
            assert c.k_scale_cache.shape == c.scale_cache_shape == (c.num_blocks, c.block_size,
                                                                    c.num_heads)
            assert c.k_scale_cache.dtype == np.float32
        else:
            assert c.new_scale_caches() == (None, None)
    assert {c.scale_granularity for c in cases} == {"tensor", "head", "token_head"}


@pytest.mark.parametrize("fault, where, cls", [
    ("scale_ignored", "cache[", None),
    ("k_scale_for_v", "value_cache[", None),
    ("padding_written", "(unwritten)", None),
    ("fnuz_bytes", "cache[", None),
    ("head0_scale", "cache[", None),
    ("recip_row", "_scale_cache[", None),
])
def test_planted_store_faults_are_caught(fault, where, cls):
    caught = 0
    for profile in OCP:
        for c in fp8kv.kv_cases(profile):
            j = fp8kv.judge_store(c, *stored(c, (fault,)))
            if j.conformant:
                continue
            caught += 1
            assert j.verdict == "nonconformant" and j.mismatches > 0
            assert any(where in line for line in j.failures), j.text
            if fault == "k_scale_for_v":
                assert j.cache_mismatches[0] == 0, j.text
            classed = sum(j.class_mismatches().values())
            if fault == "padding_written":  # sentinel bytes have no input class
                assert classed < j.mismatches, j.text
            else:  # nor have scale-cache entries
                assert classed == j.mismatches - sum(j.scale_cache_mismatches), j.text
            if fault == "recip_row":
                assert sum(j.scale_cache_mismatches) > 0, j.text
            with pytest.raises(fp8kv.NonconformantError) as e:
                c.judge_store(*stored(c, (fault,)))
            assert "verdict=nonconformant" in str(e.value)
    assert caught > 0, f"{fault} never caught"


def test_wrong_split_x_width_is_caught_in_the_key_cache():
    cases = [c for c in fp8kv.kv_cases("e4m3fn_satfinite") if c.layout == "split_x"]
    assert cases
    for c in cases:
        j = fp8kv.judge_store(c, *stored(c, ("split_x_8",)))
        assert not j and j.cache_mismatches[1] == 0 and j.cache_mismatches[0] > 0, j.text


def test_python_and_cli_give_the_same_verdicts(tmp_path):
    if not os.access(CLI, os.X_OK):
        pytest.skip(f"no fp8kv CLI at {CLI} (set FP8KV_CLI)")
    for fault in ((), ("scale_ignored",), ("padding_written",), ("recip_row",)):
        for c in fp8kv.kv_cases("e4m3fn_satfinite"):
            k, v, ks, vs = stored(c, fault)
            np.save(tmp_path / "k.npy", k)
            np.save(tmp_path / "v.npy", v)
            args = []
            if ks is not None:
                np.save(tmp_path / "ks.npy", ks)
                np.save(tmp_path / "vs.npy", vs)
                args = ["--key-scale-cache", str(tmp_path / "ks.npy"),
                        "--value-scale-cache", str(tmp_path / "vs.npy")]
            j = fp8kv.judge_store(c, k, v, ks, vs)
            r = subprocess.run([CLI, "judge-kv", "--vectors", c.vectors, "--profile", c.profile,
                                "--case", str(c.index), "--key-cache", str(tmp_path / "k.npy"),
                                "--value-cache", str(tmp_path / "v.npy"), *args],
                               capture_output=True, text=True)
            assert r.returncode == (0 if j else 1), r.stderr
            last = r.stdout.strip().splitlines()[-1]
            assert last == j.text.strip().splitlines()[-1]
            assert f"mismatches={j.mismatches} " in last


def test_encode_matches_the_golden_vectors():
    vectors = pathlib.Path(fp8kv.default_vectors())
    for profile in fp8kv.profiles():
        x = np.load(vectors / profile / "edges_input.npy").view(np.float32)
        want = np.load(vectors / profile / "edges_expected.npy")
        assert np.array_equal(fp8kv.encode(x, profile=profile), want), profile
        codes = np.arange(256, dtype=np.uint8)
        table = np.load(vectors / profile / "decode.npy")
        got = fp8kv.decode(codes, profile=profile)
        assert np.array_equal(np.isnan(got), np.isnan(table))
        assert np.array_equal(got[~np.isnan(got)], table[~np.isnan(table)]), profile


def test_encode_models_and_scales():
    x = np.array([448.0, 1.0, -0.0, np.inf, np.nan], np.float32)
    assert list(fp8kv.encode(x)) == [0x7E, 0x38, 0x80, 0x7E, 0x7F]
    assert list(fp8kv.encode(x, profile="e4m3fn_nan")[:4]) == [0x7E, 0x38, 0x80, 0x7F]
    assert fp8kv.encode(np.float32([3.0]), scale=2.0)[0] == fp8kv.encode(np.float32([1.5]))[0]
    h = np.array([1.0, -2.5], np.float16)
    assert np.array_equal(fp8kv.encode(h), fp8kv.encode(h.astype(np.float32)))
    for model in fp8kv.MODELS:
        fp8kv.encode(x, scale=0.1, model=model)
    with pytest.raises(fp8kv.Fp8kvError, match="exact"):
        fp8kv.encode(x, scale=0.1, model="exact")
    assert fp8kv.decode(np.uint8([0x38]), scale=0.5)[0] == np.float32(0.5)


def test_arrays_of_every_kind_are_taken_as_bits():
    c = fp8kv.kv_cases("e4m3fn_satfinite")[1]
    k, v, _, _ = stored(c)
    import ml_dtypes

    assert fp8kv.judge_store(c, k.view(np.int8), v.view(ml_dtypes.float8_e4m3fn))

    class Dlpack:  # only the DLPack protocol
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, *args, **kwargs):
            return self.a.__dlpack__(*args, **kwargs)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    class HasArray:  # only __array__
        def __init__(self, a):
            self.a = a

        def __array__(self, dtype=None, copy=None):
            return self.a

    assert fp8kv.judge_store(c, Dlpack(k), HasArray(v))
    rows = engine.gather(c.key_cache, c.value_cache, c.block_table, c.seq_lens, c.k_scale,
                         c.v_scale, c.layout, c.profile, c.num_heads, c.head_size, np.float16)
    assert fp8kv.judge_gather(c, rows)
    assert fp8kv.judge_gather(c, rows.view(np.uint16), dtype="f16")
    assert not fp8kv.judge_gather(c, rows.view(np.uint16), dtype="bf16")


def test_bad_input_is_an_error_naming_the_part():
    c = fp8kv.kv_cases("e4m3fn_satfinite")[0]
    k, v = c.new_caches()
    with pytest.raises(fp8kv.Fp8kvError, match="key_cache: .* bytes"):
        fp8kv.judge_store(c, k.reshape(-1)[1:], v)
    with pytest.raises(fp8kv.Fp8kvError, match="key_cache: elements of 4 bytes"):
        fp8kv.judge_store(c, k.astype(np.float32), v)
    with pytest.raises(fp8kv.Fp8kvError, match="give dtype"):
        fp8kv.judge_gather(c, np.zeros(4, np.uint16))
    with pytest.raises(fp8kv.Fp8kvError, match="float32"):
        fp8kv.judge_attention(c, np.zeros(4, np.float16))
    with pytest.raises(fp8kv.Fp8kvError, match="unknown case"):
        fp8kv.kv_case("e4m3fn_satfinite", 99)
    with pytest.raises(fp8kv.Fp8kvError, match="unknown profile"):
        fp8kv.kv_cases("e4m3fn_bogus")
    with pytest.raises(fp8kv.Fp8kvError, match="did you mean 'e5m2_inf'"):
        fp8kv.kv_case("e5m2_ifn", 0)
    token = next(t for t in fp8kv.kv_cases("e4m3fn_satfinite") if t.scale_granularity ==
                 "token_head")
    tk, tv, tks, tvs = stored(token)
    with pytest.raises(fp8kv.Fp8kvError, match="scale per token and head.*give both"):
        fp8kv.judge_store(token, tk, tv)
    with pytest.raises(fp8kv.Fp8kvError, match="key_scale_cache: .* entries"):
        fp8kv.judge_store(token, tk, tv, tks.reshape(-1)[1:], tvs)
    with pytest.raises(fp8kv.Fp8kvError, match="float32 scales"):
        fp8kv.judge_store(token, tk, tv, tks.astype(np.float16), tvs)
    with pytest.raises(fp8kv.Fp8kvError, match="no scale caches"):
        fp8kv.judge_store(c, k, v, tks, tvs)


def test_tampered_vectors_are_refused(tmp_path):
    import shutil

    copy = tmp_path / "vectors"
    shutil.copytree(fp8kv.default_vectors(), copy)
    meta = copy / "e4m3fn_satfinite" / "kv" / "case0_meta.npy"
    data = bytearray(meta.read_bytes())
    data[-1] ^= 1
    meta.write_bytes(bytes(data))
    with pytest.raises(fp8kv.Fp8kvError, match="case0_meta.npy"):
        fp8kv.kv_cases("e4m3fn_satfinite", vectors=copy)


def test_a_failing_fixture_test_prints_the_report(tmp_path):
    test = tmp_path / "test_faulty.py"
    test.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT / 'examples' / 'python')!r})\n"
        "import numpy_engine as engine, pytest\n"
        "@pytest.mark.fp8kv_profiles('e4m3fn_satfinite')\n"
        "def test_store(fp8kv_case):\n"
        "    c = fp8kv_case\n"
        "    k, v = c.new_caches()\n"
        "    engine.store(c.key, c.value, c.slot_mapping, k, v, c.k_scale, c.v_scale,\n"
        "                 c.layout, c.profile, ('k_scale_for_v',))\n"
        "    c.judge_store(k, v)\n")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        str(test)], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "verdict=nonconformant" in r.stdout and "value_cache[" in r.stdout, r.stdout
    assert "e4m3fn_satfinite-case0" in r.stdout


# Fixed in bf61b87: a big-endian array (">f4") was read as raw bits in the machine's order, not
# by value. 1.0, -2.5 and 448 are 0x38, 0xC2 and 0x7E in e4m3fn (1.0 = 2^0: exponent field 7;
# 2.5 = 1.25 * 2^1: exponent 8, mantissa 2, sign bit; 448 the largest finite value).
def test_bug20261201_big_endian_arrays_were_read_as_bits():
    x = np.array([1.0, -2.5, 448.0], np.float32)
    assert list(fp8kv.encode(x)) == [0x38, 0xC2, 0x7E]
    assert list(fp8kv.encode(x.astype(">f4"))) == [0x38, 0xC2, 0x7E]
    assert list(fp8kv.encode(x.astype(np.float16))) == [0x38, 0xC2, 0x7E]  # by value, any dtype
    c = fp8kv.kv_cases("e4m3fn_satfinite")[0]
    rows = engine.gather(c.key_cache, c.value_cache, c.block_table, c.seq_lens, c.k_scale,
                         c.v_scale, c.layout, c.profile, c.num_heads, c.head_size, np.float32)
    assert fp8kv.judge_gather(c, rows.astype(">f4"))


# Fixed in bf61b87: a 0-d input came back 1-d (np.ascontiguousarray makes 0-d arrays 1-d).
def test_bug20261201_zero_d_arrays_came_back_one_d():
    assert fp8kv.encode(np.float32(1.0)).shape == ()
    assert fp8kv.decode(np.uint8(0x38)).shape == ()


# Fixed in bf61b87: a gather dtype= contradicting the rows' own dtype (float16 rows judged as
# "bf16") was taken, judging the rows as the wrong format; it is refused, as is a dtype name
# judge_gather does not know.
def test_bug20261201_gather_dtype_contradicting_the_rows_was_taken():
    c = fp8kv.kv_cases("e4m3fn_satfinite")[0]
    rows = engine.gather(c.key_cache, c.value_cache, c.block_table, c.seq_lens, c.k_scale,
                         c.v_scale, c.layout, c.profile, c.num_heads, c.head_size, np.float16)
    assert fp8kv.judge_gather(c, rows, dtype="f16")
    with pytest.raises(fp8kv.Fp8kvError, match="but the rows are float16"):
        fp8kv.judge_gather(c, rows, dtype="bf16")
    with pytest.raises(fp8kv.Fp8kvError, match="give \"f32\""):
        fp8kv.judge_gather(c, rows, dtype="float32")


# Fixed in bf61b87: a bool array (one byte per element) was taken as cache codes.
def test_bug20261201_bool_arrays_were_taken_as_codes():
    c = fp8kv.kv_cases("e4m3fn_satfinite")[0]
    k, v = c.new_caches()
    with pytest.raises(fp8kv.Fp8kvError, match="one-byte codes"):
        fp8kv.judge_store(c, k.astype(bool), v)
    with pytest.raises(fp8kv.Fp8kvError, match="one byte each"):
        fp8kv.decode(np.zeros(4, bool))


# Fixed in bf61b87: a name that is not a str (None) failed inside the package (AttributeError on
# None.encode) instead of being an fp8kv error naming the argument.
def test_bug20261201_names_not_str_were_not_fp8kv_errors():
    c = fp8kv.kv_cases("e4m3fn_satfinite")[0]
    k, v = c.new_caches()
    with pytest.raises(fp8kv.Fp8kvError, match="profile must be a name"):
        fp8kv.kv_cases(None)
    with pytest.raises(fp8kv.Fp8kvError, match="subject must be a name"):
        fp8kv.judge_store(c, k, v, subject=None)
    with pytest.raises(fp8kv.Fp8kvError, match="model must be a name"):
        fp8kv.encode(np.float32([1.0]), model=None)


# Fixed in bf61b87: encode and decode took a scale that is no store's or read's (0, negative,
# NaN, Inf) and returned codes and values for it; a scale is a finite number above 0.
def test_bug20261201_scales_not_finite_above_0_were_taken():
    for scale in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(fp8kv.Fp8kvError, match="finite number above 0"):
            fp8kv.encode(np.float32([1.0]), scale=scale)
        with pytest.raises(fp8kv.Fp8kvError, match="finite number above 0"):
            fp8kv.decode(np.uint8([0x38]), scale=scale)


# Fixed in bf61b87: a case's arrays were writable, so one test could change the case every
# later test is judged against.
def test_bug20261201_case_arrays_were_writable():
    c = fp8kv.kv_cases("e4m3fn_satfinite")[0]
    with pytest.raises(ValueError):
        c.key[0, 0, 0] = 0
    with pytest.raises(ValueError):
        c.key_cache[0] = 0


def _copy_of_the_vectors(tmp_path):
    import shutil

    copy = tmp_path / "vectors"
    shutil.copytree(fp8kv.default_vectors(), copy)
    return copy


def _overwrite_data(path, byte):
    """Every element byte of the .npy file at path set to byte (the header kept)."""
    data = path.read_bytes()
    size = np.load(path).nbytes
    path.write_bytes(data[:len(data) - size] + bytes([byte]) * size)


# Fixed in this change: the package verified a vector directory once per process and read the
# golden files again afterwards, unchecked (numpy.load of the paths for the arrays, the C judge
# for each verdict): overwriting case 0's golden caches with 0xA5 after kv_cases() turned an
# unwritten store from "nonconformant 767" into "conformant 0", and a second kv_cases() on the
# altered directory was accepted. The digests verification computed are kept, every read of a
# golden file is hashed and compared with them and parsed from the bytes read (the arrays too),
# and kv_cases() verifies in full at each call. On a copy of the vectors.
def test_bug20261203_golden_files_were_read_again_unchecked(tmp_path):
    copy = _copy_of_the_vectors(tmp_path)
    cases = fp8kv.kv_cases("e4m3fn_satfinite", vectors=copy)
    c = cases[0]
    k, v = c.new_caches()  # a store that writes nothing
    j = fp8kv.judge_store(c, k, v)
    assert not j and j.mismatches > 0, j.text
    kv = copy / "e4m3fn_satfinite" / "kv"
    for name in ("case0_key_cache.npy", "case0_value_cache.npy"):
        _overwrite_data(kv / name, 0xA5)
    with pytest.raises(fp8kv.Fp8kvError, match="case0_key_cache.npy: changed since"):
        fp8kv.judge_store(c, k, v)
    # nothing more is judged against the directory, and verifying it again fails
    with pytest.raises(fp8kv.Fp8kvError, match="not the verified truth"):
        fp8kv.judge_store(cases[1], *cases[1].new_caches())
    with pytest.raises(fp8kv.Fp8kvError, match="case0_key_cache.npy"):
        fp8kv.kv_cases("e4m3fn_satfinite", vectors=copy)
    # a case's arrays come from the bytes verified, not from the file read again
    copy2 = _copy_of_the_vectors(tmp_path / "second")
    fp8kv.kv_cases("e4m3fn_satfinite", vectors=copy2)
    _overwrite_data(copy2 / "e4m3fn_satfinite" / "kv" / "case1_key.npy", 0)
    with pytest.raises(fp8kv.Fp8kvError, match="case1_key.npy: changed since"):
        fp8kv.kv_case("e4m3fn_satfinite", 1, vectors=copy2)


# Fixed in this change: the pytest plugin likewise: a test that rewrote the golden caches (to
# what a store that writes nothing leaves) made the 15 later stores that write nothing pass.
# They are errors naming the file now, never verdicts.
def test_bug20261203_a_test_rewriting_the_truth_made_later_tests_pass(tmp_path):
    copy = _copy_of_the_vectors(tmp_path)
    test = tmp_path / "test_rewrite.py"
    test.write_text(
        "import pathlib\n"
        "import numpy as np\n"
        "import pytest\n"
        f"KV = pathlib.Path({str(copy)!r}) / 'e4m3fn_satfinite' / 'kv'\n"
        "def test_a_rewrite():  # runs first: every golden cache as an empty store leaves it\n"
        "    for path in KV.glob('case*_cache.npy'):\n"
        "        data = path.read_bytes()\n"
        "        size = np.load(path).nbytes\n"
        "        path.write_bytes(data[:len(data) - size] + b'\\xa5' * size)\n"
        "@pytest.mark.fp8kv_profiles('e4m3fn_satfinite')\n"
        "def test_store(fp8kv_case):  # a store that writes nothing\n"
        "    c = fp8kv_case\n"
        "    c.judge_store(*c.new_caches(), *c.new_scale_caches())\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(pathlib.Path(fp8kv.__file__).resolve().parents[1])] +
        ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                        "fp8kv.pytest_plugin", "--fp8kv-vectors", str(copy), str(test)],
                       capture_output=True, text=True, cwd=tmp_path, env=env)
    cases = len(fp8kv.kv_cases("e4m3fn_satfinite"))
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"{cases} failed, 1 passed" in r.stdout, r.stdout
    assert "case0_key_cache.npy: changed since" in r.stdout, r.stdout
    assert "verdict=conformant" not in r.stdout


# Fixed in this change: the case index went to C as an int, so kv_case(p, 2**32 + 3) was case
# 3. An index outside C's int is no case, and an index that is no integer is refused.
def test_bug20261203_a_case_index_wrapped_through_a_c_int():
    profile = "e4m3fn_satfinite"
    assert fp8kv.kv_case(profile, np.int64(3)).index == 3
    for index in (2**32 + 3, -(2**32) + 3, 2**31, 2**64):
        with pytest.raises(fp8kv.Fp8kvError, match=f"unknown case {index}: profile {profile} "
                                                   "has cases 0.."):
            fp8kv.kv_case(profile, index)
    for index in (3.0, True, "3"):
        with pytest.raises(fp8kv.Fp8kvError, match="give an int"):
            fp8kv.kv_case(profile, index)


# Fixed on 2026-12-07: a case object's index and names crossed to C unchecked. A copy of case 3
# whose index was set to 2**32 + 3 was judged as case 3, conformant; a name with a NUL in it was
# read by C up to the NUL (profile "e4m3fn_satfinite\0x" was e4m3fn_satfinite). Every index and
# name is checked where it crosses.
def test_bug20261207_a_case_objects_index_and_names_crossed_to_c_unchecked():
    import copy

    case = fp8kv.kv_case("e4m3fn_satfinite", 3)
    caches = (case.key_cache.copy(), case.value_cache.copy(), *case.new_scale_caches())
    assert fp8kv.judge_store(case, *caches).conformant
    for index in (2**32 + 3, -1, 2**64):
        moved = copy.copy(case)
        moved.index = index
        with pytest.raises(fp8kv.Fp8kvError, match=f"unknown case {index}"):
            fp8kv.judge_store(moved, *caches)
    renamed = copy.copy(case)
    renamed.profile = "e4m3fn_satfinite\0x"
    with pytest.raises(fp8kv.Fp8kvError, match="holds a NUL character"):
        fp8kv.judge_store(renamed, *caches)
    for call in (lambda: fp8kv.kv_case("e4m3fn_satfinite\0x", 3),
                 lambda: fp8kv.judge_attention(case, np.zeros(1, np.float32), "f32\0,k=v"),
                 lambda: fp8kv.encode(np.zeros(4, np.float32), "e4m3fn_satfinite\0x")):
        with pytest.raises(fp8kv.Fp8kvError, match="holds a NUL character"):
            call()


# Fixed in this change: an input was copied to a contiguous array before its size was checked,
# so a wrong-sized broadcast view was materialized (16 GiB of one byte reached 18.6 GB) only to
# be refused. The shape is checked first; nothing of a refused input is copied (here 1 GiB
# views of one element; the copies would show in tracemalloc, which numpy reports to).
def test_bug20261203_inputs_were_copied_before_their_size_was_checked():
    import tracemalloc

    c = fp8kv.kv_cases("e4m3fn_satfinite")[0]
    token = next(t for t in fp8kv.kv_cases("e4m3fn_satfinite")
                 if t.scale_granularity == "token_head")
    k, v = c.new_caches()
    tk, tv = token.new_caches()
    tks, tvs = token.new_scale_caches()
    huge8 = np.broadcast_to(np.uint8(0xA5), (1 << 30,))
    huge32 = np.broadcast_to(np.float32(1.0), (1 << 28,))
    tracemalloc.start()
    try:
        with pytest.raises(fp8kv.Fp8kvError, match=f"key_cache: {1 << 30} bytes, but case 0"):
            fp8kv.judge_store(c, huge8, v)
        with pytest.raises(fp8kv.Fp8kvError, match=f"value_cache: {1 << 29} bytes"):
            fp8kv.judge_store(c, k, huge8[::2].reshape(1 << 14, -1))
        with pytest.raises(fp8kv.Fp8kvError, match=f"key_scale_cache: {1 << 28} entries"):
            fp8kv.judge_store(token, tk, tv, huge32, tvs)
        with pytest.raises(fp8kv.Fp8kvError, match=f"gather: {1 << 28} elements"):
            fp8kv.judge_gather(c, huge32)
        with pytest.raises(fp8kv.Fp8kvError, match=f"attention: {1 << 28} elements"):
            fp8kv.judge_attention(c, huge32)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, f"{peak} bytes allocated to refuse inputs of the wrong size"
    # the right size is still judged, whatever its strides
    assert not fp8kv.judge_store(c, np.broadcast_to(np.uint8(0xA5), k.shape), v)


def test_kept_references_give_the_verdicts_of_a_fresh_computation(tmp_path):
    """The engine suite's references are kept in the process (fp8kv_suite_judge_attention):
    judging outputs of one case under several arithmetics, with another case between, gives
    every verdict document that a process computing each reference afresh gives."""
    profile = "e4m3fn_satfinite"
    case = fp8kv.engine_case(profile, 8)
    exact, lo, hi = case.reference("f32")
    good = exact.astype(np.float32)
    bad = good.copy()
    bad[1, 1, 3] = np.float32(hi[1, 1, 3] + 4 * (hi[1, 1, 3] - lo[1, 1, 3]))
    other = fp8kv.engine_case(profile, 7)
    other_out = other.reference("f32")[0].astype(np.float32)
    steps = [(good, "f32"), (bad, "f32"), (bad, "f32,exp_ulps=4000"), (other_out, "f32"),
             (good, "f32"), (bad, "f32"), (bad, "f32,exp_ulps=4000")]
    docs = []
    for out, arithmetic in steps:
        target = other if out is other_out else case
        docs.append(fp8kv.judge_attention(target, out, arithmetic=arithmetic).json)
    assert docs[4:] == [docs[0], docs[1], docs[2]]
    assert [d["verdict"] for d in docs[:2]] == ["conformant", "nonconformant"]
    ratio = [float(d["checks"][-1]["bound_ratio"]) for d in docs[1:3]]
    assert ratio[0] != ratio[1]  # the arithmetic's fields are part of what a kept one is for
    # afresh: each in a process of its own
    for (out, arithmetic), doc in zip(steps[:3], docs[:3]):
        np.save(tmp_path / "out.npy", out)
        script = ("import json, sys, numpy as np, fp8kv\n"
                  f"c = fp8kv.engine_case({profile!r}, 8)\n"
                  f"out = np.load({str(tmp_path / 'out.npy')!r})\n"
                  f"print(json.dumps(fp8kv.judge_attention(c, out, arithmetic={arithmetic!r}).json))")
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout) == doc
