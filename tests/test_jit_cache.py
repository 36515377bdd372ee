"""A stale Numba cache index that names a record class no longer there (an older riskset's
cache) reads as empty, and the kernel compiles again, instead of raising on load."""
import pickle
import sys

import numba
from numba.core.caching import IndexDataCacheFile

import riskset.core.jit  # noqa: F401  (applies the tolerant index on import)


class Gone:
    pass


def test_an_index_naming_a_missing_class_reads_as_empty(tmp_path, monkeypatch):
    index = IndexDataCacheFile(str(tmp_path), "kernel-1.py311", source_stamp=(1.0, 10))
    index._save_index({("sig", Gone): "kernel-1.py311.1.nbc"})
    assert index._load_index() == {("sig", Gone): "kernel-1.py311.1.nbc"}
    monkeypatch.delattr(sys.modules[__name__], "Gone")  # the class moved away since the index was written
    assert index._load_index() == {}
    index.save(("sig",), b"data")  # and the index is rewritten
    assert index._load_index() == {("sig",): "kernel-1.py311.1.nbc"}


def test_an_index_of_another_numba_version_is_still_empty(tmp_path):
    index = IndexDataCacheFile(str(tmp_path), "kernel-2.py311", source_stamp=(1.0, 10))
    with open(index._index_path, "wb") as f:
        pickle.dump("0.0.0" if numba.__version__ != "0.0.0" else "1", f)
        f.write(b"not a pickle")
    assert index._load_index() == {}
