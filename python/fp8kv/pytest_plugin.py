"""The fp8kv pytest plugin (entry point pytest11): the fixture `fp8kv_case`, parametrized over
the golden KV cases, and `fp8kv_engine_case`, over the engine suite's decode cases (head sizes
64..256, up to 8 x 8,192 tokens: generated when a test first uses one, its inputs checked
against the committed digests).

    def test_store(fp8kv_case):
        k, v = fp8kv_case.new_caches()
        my_store(fp8kv_case.key, fp8kv_case.value, fp8kv_case.slot_mapping, k, v, ...)
        fp8kv_case.judge_store(k, v)   # a failure prints the judge's report

    def test_decode(fp8kv_engine_case):
        c = fp8kv_engine_case
        out = my_decode(c.query_in("bf16"), c.key_cache, c.value_cache, c.block_table, ...)
        c.judge_attention(out, arithmetic="bf16")

Which profiles (for both): `@pytest.mark.fp8kv_profiles("e4m3fn_satfinite", ...)` on a test, else
`--fp8kv-profile NAME` (repeatable) on the command line, else every profile. `--fp8kv-vectors
DIR` judges against another vector directory. The cases are loaded (the directory verified in
full) at collection; each judgement reads its case again, checked against the digests verified,
so a test that alters the golden files makes the later judgements errors, never passes.
"""
import pytest


def pytest_addoption(parser):
    group = parser.getgroup("fp8kv")
    group.addoption("--fp8kv-profile", action="append", default=None, metavar="NAME",
                    help="the profiles fp8kv_case runs over (repeatable; default: all)")
    group.addoption("--fp8kv-vectors", default=None, metavar="DIR",
                    help="the golden vector directory (default: $FP8KV_VECTORS or the package's)")


def pytest_configure(config):
    config.addinivalue_line("markers", "fp8kv_profiles(*names): the profiles fp8kv_case covers")


def pytest_generate_tests(metafunc):
    for fixture, suite in (("fp8kv_case", "golden"), ("fp8kv_engine_case", "engine")):
        if fixture not in metafunc.fixturenames:
            continue
        import fp8kv

        marker = metafunc.definition.get_closest_marker("fp8kv_profiles")
        names = (list(marker.args) if marker else None) or \
            metafunc.config.getoption("fp8kv_profile") or fp8kv.profiles()
        vectors = metafunc.config.getoption("fp8kv_vectors")
        cases = [c for name in names for c in fp8kv.kv_cases(name, vectors, suite=suite)]
        metafunc.parametrize(fixture, cases, ids=[c.id for c in cases])
