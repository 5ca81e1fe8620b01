"""The bounding hash that Spark's executors run: DuckDB's keyed hash on Arrow batches, sent
by value, refusing a DuckDB version other than the driver's; and the errors users see."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from dpsense.errors import InputError
from dpsense.tables.engines.duckdb.bound import keyed_hash
from dpsense.tables.engines.spark import workers as spark_workers

pytestmark = pytest.mark.spark


class _Frame:
    """Just what ``_with_keyed_hash`` touches: the schema and ``mapInArrow``."""

    def __init__(self) -> None:
        from pyspark.sql import types as st

        self.schema = st.StructType(
            [st.StructField("u", st.LongType()), st.StructField("v", st.DoubleType())]
        )
        self.fn: Any = None

    def mapInArrow(self, fn: Any, schema: Any) -> _Frame:
        self.fn = fn
        return self


def _batch() -> Any:
    return pa.record_batch(
        {
            "u": pa.array([1, 2, 3, 3], pa.int64()),
            "v": pa.array([0.5, -1.5, 2.5, 2.5]),
            "g0": pa.array(["a", "b", "c", "d"]),
        }
    )


def test_the_executors_hash_is_duckdbs_keyed_hash_and_needs_no_dpsense(tmp_path: Any) -> None:
    from pyspark import cloudpickle

    frame = _Frame()
    spark_workers._with_keyed_hash(frame, "hr", keyed_hash(77, "v"), ["u", "v"])
    payload = cloudpickle.dumps(frame.fn)  # what an executor receives
    fn = cloudpickle.loads(payload)
    out = next(iter(fn(iter([_batch()]))))
    assert out.column_names == ["u", "v", "g0", "hr"]
    con = duckdb.connect()
    con.register("b", pa.Table.from_batches([_batch()]))
    want = con.execute(f"SELECT {keyed_hash(77, 'v')} FROM b").fetchnumpy()
    assert np.array_equal(out.column("hr").to_numpy(), next(iter(want.values())))
    # an executor without dpsense unpickles and runs it (any import of dpsense fails there)
    (tmp_path / "fn.pkl").write_bytes(payload)
    script = (
        "import sys, pickle, pyarrow as pa; sys.modules['dpsense'] = None; "
        f"fn = pickle.loads(open({str(tmp_path / 'fn.pkl')!r}, 'rb').read()); "
        "b = pa.record_batch({'u': pa.array([1], pa.int64()), 'v': pa.array([0.5])}); "
        "print(next(iter(fn(iter([b])))).column('hr')[0])"
    )
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    assert int(ran.stdout) == int(out.column("hr")[0].as_py())


def test_an_executor_with_another_duckdb_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    frame = _Frame()
    monkeypatch.setattr(duckdb, "__version__", "0.0.1")  # the driver's, at build time
    spark_workers._with_keyed_hash(frame, "hr", keyed_hash(1, "v"), ["u", "v"])
    monkeypatch.undo()
    with pytest.raises(RuntimeError, match=spark_workers._VERSION_MARK) as raised:
        list(frame.fn(iter([_batch()])))
    error = spark_workers._worker_error(raised.value)
    assert isinstance(error, InputError)
    assert "DuckDB version" in str(error)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("PythonException: ModuleNotFoundError: No module named 'duckdb'", "duckdb"),
        ("ModuleNotFoundError: No module named 'pyarrow.lib'", "pyarrow"),
        ("ModuleNotFoundError: No module named 'pandas'", None),
        ("some other failure", None),
    ],
)
def test_worker_errors_name_what_is_missing(text: str, expected: str | None) -> None:
    error = spark_workers._worker_error(RuntimeError(text))
    if expected is None:
        assert error is None
    else:
        assert isinstance(error, InputError)
        assert expected in str(error)
        assert "PYSPARK_PYTHON" in str(error)
