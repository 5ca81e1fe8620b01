"""Large groups of a DuckDB release, kept in DuckDB: only what a method asks leaves it.

Without a privacy unit every row is kept, and building each group's histogram of clipped
values (a GROUP BY over every distinct (group, value) pair) costs several times DuckDB's
own grouped median on continuous data. When the release reads held records
(``grouped.reads_held``: the exponential-mechanism quantile, the sum and the means), the
groups ``held_scan`` chooses are not moved to Python. DuckDB answers instead:

* the exponential-mechanism quantile: the distinct values around the target rank (the
  window of ``window_ranks``, with their multiplicities and the numbers of records below
  and above), for every held group in one query. The buckets of the pass that counts the
  groups (``pass_cells``: rows, smallest and largest value per group and bucket of the
  value) bracket the target rank exactly, or, when a bucket holds too many rows or the
  pass took none, a value-hash sample of each group does; one pass over the raw values
  (:class:`RawRows`: conditions on the unclipped value, so DuckDB filters the column as
  it scans; with buckets, only the rows between the lowest bracket start and a ceiling
  whose rows above the buckets count) counts the rows below each bracket and returns the
  rows inside it, for every level the query announced at once; the rows outside become
  two sentinel entries (-inf and +inf) and the window rows are kept by their cumulative
  counts (``tables.windows``). A group whose window reaches a sentinel (a bracket too
  narrow, which the margins make rare) is answered from its whole histogram instead;
* the sum and the means: exact integer sums (HUGEINT) of the records mapped to the
  statistic's public grid, with numpy's ``rint`` (halves to even) written in SQL, in one
  query for every large group;
* the two counts of the sampler's rare tail step, one query each.

Anything else (permute-and-flip grids, the sampler's full path on pathological data)
reads the group's records after all: the first such call builds the histogram of every
held group (what the engine did before), and each group is then rebuilt from it. Every
answer is exact, so the release equals the one from an array of the same records, for
the same seed; the sample and the brackets decide only the running time.
"""

from __future__ import annotations

import math
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from dpsense.mechanisms._quantile_sampler import window_ranks
from dpsense.statistics._exact import RecordGrid
from dpsense.tables.engines.duckdb.cells import counts_below_all
from dpsense.tables.engines.duckdb.pass_cells import Buckets, bucket_bracket, bucket_ceiling
from dpsense.tables.engines.duckdb.raw_rows import RawRows
from dpsense.tables.engines.duckdb.sum_sql import (
    grid_sum_sql,
    quanta_sum_sql,
    rint_sql,
    sample_test,
)
from dpsense.tables.rows.windows import (
    BATCH_ROWS,
    SAMPLE_MOD,
    HeldGroup,
    cut_window,
    split_by_group,
    window_of,
)

__all__ = [
    "SAMPLE_MOD",
    "DuckGroup",
    "DuckGroups",
    "RawRows",
    "grid_sum_sql",
    "quanta_sum_sql",
    "rint_sql",
    "sample_test",
]

_PAD: Final = 256
"""Ranks beyond the window each side that leave DuckDB (room for the neighbours' ties)."""
_WIDE_ROWS: Final = 1 << 16
"""A group's buckets bracket its window when they hold at most this many rows (or an
eighth of the group); otherwise the held groups' samples are taken (one more pass)."""
_WHOLE_ROWS: Final = 1 << 21
"""Brackets of more rows than this in all (estimated) are sorted and sliced in DuckDB;
smaller ones leave whole (16 MB at most) and are sorted in numpy."""

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]


class DuckGroups:
    """The large groups of one release (or of several statistics of one query on the same
    column and bounds), answered from ``stage`` (SQL yielding the bounded, clipped rows as
    ``gid, v``) on the release's DuckDB cursor; the window pass reads ``raw`` (default:
    ``stage`` itself)."""

    def __init__(
        self,
        con: Any,
        stage: str,
        sizes: dict[int, int],
        samples: dict[int, tuple[F64, I64]],
        raw: RawRows | None = None,
        hints: tuple[tuple[int, int], ...] = (),
        bounds: tuple[float, float] | None = None,
        buckets: dict[int, Buckets] | None = None,
    ) -> None:
        self.con = con
        self.stage = stage
        self.sizes = sizes
        self.samples = samples
        """Each group's value-hash sample: sorted distinct values and their counts."""
        self.raw = raw or RawRows(f"SELECT gid, v AS x FROM ({stage})", ("gid",), None, None, None)
        self.hints = hints
        """Other quantile levels (num, den) the release or its query will ask windows of:
        their brackets are fetched in the same pass (speed only)."""
        self.bounds = bounds
        self.buckets = buckets or {}
        """Each group's buckets of the first pass (``pass_cells``), for the groups without
        a sample: they bracket a window exactly, unless a bucket holds too many rows."""
        self._ceiling = math.inf
        """Rows above this are not read by the window pass (counted by the buckets)."""
        self._upto: dict[int, int] = {}
        """Each group's rows at or below the ceiling (all, without one)."""
        self._loaded = False
        self._windows: dict[tuple[int, int, int], dict[int, Any]] = {}
        self._brackets: dict[int, list[tuple[int, F64]]] = {}
        """Fetched whole brackets per group: (rows below, sorted clipped rows inside)."""
        self._sums: dict[tuple[Any, ...], dict[int, int]] = {}
        self._chunk: dict[int, tuple[F64, I64]] = {}
        self._below: dict[tuple[float, ...], dict[int, I64]] = {}
        """Histograms of a run of consecutive held groups (for :meth:`values`)."""
        self._held_distinct: dict[int, int] = {}
        self.queries = 0
        """Queries run for the windows, counts and sums (for tests and benchmarks)."""
        self.fallbacks = 0
        """Groups whose bracket missed their window (answered from their histogram)."""

    def group(self, gid: int) -> DuckGroup:
        return DuckGroup(self, gid)

    def _held(self) -> str:
        return ", ".join(str(g) for g in sorted(self.sizes))

    def window(self, gid: int, num: int, den: int, w: int) -> tuple[F64, I64, int, int] | None:
        """The window of ``window_ranks`` of group ``gid``; one query computes it for every
        held group at once (same level and width, each with its own n), with the brackets
        of the hinted levels."""
        key = (num, den, w)
        if key not in self._windows:
            self._windows[key] = self._all_windows(num, den, w)
        return self._windows[key].get(gid)

    def _bracket(self, gid: int, lo: int, hi: int, w: int) -> tuple[float, float]:
        """Values a <= x_(lo) and b >= x_(hi) from the group's sample, with a margin of
        several standard deviations of the sample's rank estimate (speed only); or from
        its buckets, when they hold few rows around the window."""
        if gid not in self.samples and gid in self.buckets:
            pad = w + _PAD + 4
            a, b, inside = bucket_bracket(self.buckets[gid], lo - pad, hi + pad, self.raw.clip)
            if inside <= max(_WIDE_ROWS, self.sizes[gid] >> 3):
                return a, b
            self._sample_all()  # a bucket of too many rows: the sample's brackets instead
        values, counts = self.samples.get(gid, (np.zeros(0), np.zeros(0, dtype=np.int64)))
        n = self.sizes[gid]
        total = int(counts.sum())
        if total == 0:
            return -math.inf, math.inf
        est = np.cumsum(counts) * (n / total)  # estimated #{x <= v_j}
        # whole runs of ties are sampled together: the estimate's spread is set by the
        # number of distinct values sampled, not of rows
        margin = 1.5 * n / math.sqrt(values.shape[0]) + w + 2
        i = int(np.searchsorted(est, lo - margin, side="right")) - 1
        j = int(np.searchsorted(est, hi + margin, side="left")) + 1
        a = float(values[i]) if i >= 0 else -math.inf
        b = float(values[j]) if j < values.shape[0] else math.inf
        return a, b

    def _sample_all(self) -> None:
        """The value-hash sample of every held group without one (one pass)."""
        todo = [g for g in sorted(self.sizes) if g not in self.samples]
        if not todo:
            return
        rows = self.raw.sql
        if self.raw.keys is not None:
            on = ", ".join(self.raw.on)
            rows = f"SELECT k.gid, s.x FROM ({rows}) s JOIN ({self.raw.keys}) k USING ({on})"
        listed = ", ".join(str(g) for g in todo)
        got = self.con.execute(
            f"SELECT gid, x FROM ({rows}) WHERE gid IN ({listed}) AND {sample_test('x')}"
        ).fetchnumpy()
        self.queries += 1
        split = split_by_group(
            np.asarray(got["gid"], dtype=np.int64), np.asarray(got["x"], dtype=np.float64)
        )
        for g in todo:
            x = self.raw.clip(split.get(g, np.zeros(0)))
            self.samples[g] = np.unique(x, return_counts=True)

    def _from_cache(self, gid: int, lo: int, hi: int) -> Any:
        for below, inside in self._brackets.get(gid, ()):
            if not below < lo < hi < below + inside.shape[0] - 1:
                continue  # the window and its neighbours reach past this bracket
            got = window_of(self.sizes[gid], below, inside.shape[0], 0, inside, lo, hi)
            if got is not None:
                return got
        return None

    def _all_windows(self, num: int, den: int, w: int) -> dict[int, Any]:
        ranks = {
            g: r for g, n in self.sizes.items() if (r := window_ranks(n, num, den, w)) is not None
        }
        out: dict[int, Any] = {}
        for g, (lo, hi) in ranks.items():
            if (got := self._from_cache(g, lo, hi)) is not None:
                out[g] = got
        todo = {g: r for g, r in ranks.items() if g not in out}
        if not todo:
            return out
        levels = [(num, den), *(h for h in self.hints if h != (num, den))]
        wanted = [
            {g: r for g in todo if (r := window_ranks(self.sizes[g], *lv, w)) is not None}
            for lv in levels
        ]
        wanted[0] = todo
        fetched = self._fetch(wanted, w)
        for g, (lo, hi) in todo.items():
            below, m, s0, part = fetched[0][g]
            got = window_of(self.sizes[g], below, m, s0, part, lo, hi)
            if got is None:  # the bracket missed the window
                self.fallbacks += 1
                values, counts = self._histogram(g)
                got = cut_window(values, counts, lo, hi, self.sizes[g])
            out[g] = got
        return out

    def _fetch(
        self, wanted: list[dict[int, tuple[int, int]]], w: int
    ) -> list[dict[int, tuple[int, int, int, F64]]]:
        """For each level's groups and ranks: rows below the bracket, rows inside it, the
        offset of the part that left DuckDB and that part (sorted, clipped), in one pass.
        Small brackets leave whole (and are kept for later levels); large ones are sorted
        and sliced around the window ranks in DuckDB."""
        gids, arrays, big, floor = self._register_brackets(wanted, w)
        found, inside = self._scan_brackets(len(wanted), big, floor, int(w) + _PAD)
        index = {g: i for i, g in enumerate(gids)}
        small = not all(big)
        nk = len(wanted)
        out: list[dict[int, tuple[int, int, int, F64]]] = []
        for k, lv in enumerate(wanted):
            level: dict[int, tuple[int, int, int, F64]] = {}
            at = nk + (1 if small else 0) + 3 * sum(big[:k])
            for g in lv:
                row = found.get(g)
                # a group with no row at or above the floor has all its rows below
                below = int(row[k]) if row is not None else self._upto[g]
                if big[k]:
                    m, s0, part = row[at : at + 3] if row is not None else (0, 0, None)
                    x = np.sort(self.raw.clip(np.asarray(part or [], dtype=np.float64)))
                    level[g] = (below, int(m or 0), int(s0 or 0), x)
                    continue
                u = inside.get(g, np.zeros(0))
                a, b = arrays[f"a{k}"][index[g]], arrays[f"b{k}"][index[g]]
                x = np.sort(self.raw.clip(u[(u >= a) & (u <= b)]))
                level[g] = (below, int(x.shape[0]), 0, x)
                self._brackets.setdefault(g, []).append((below, x))
            out.append(level)
        return out

    def _register_brackets(
        self, wanted: list[dict[int, tuple[int, int]]], w: int
    ) -> tuple[list[int], dict[str, np.ndarray], list[bool], float]:
        """Write each level's brackets (value thresholds ``a``, ``b`` and ranks ``lo``,
        ``hi`` by group) to the table ``dpsense_br``; return the groups, the columns, which
        levels are too large to leave DuckDB whole, and the lowest bracket start."""
        gids = sorted({g for lv in wanted for g in lv})
        cols: dict[str, list[Any]] = {"gid": gids, "n": [self.sizes[g] for g in gids]}
        big: list[bool] = []
        floor = math.inf  # the lowest bracket start: rows below every bracket are not read
        top = -math.inf  # the highest bracket end
        for k, lv in enumerate(wanted):
            br = {g: self._bracket(g, lo, hi, w) for g, (lo, hi) in lv.items()}
            starts = {g: self.raw.threshold(br[g][0], "low") for g in br}
            ends = {g: self.raw.threshold(br[g][1], "high") for g in br}
            floor = min([floor, *starts.values()])  # a level may want no group
            top = max([top, *ends.values()])
            cols[f"a{k}"] = [starts.get(g, 1.0) for g in gids]
            cols[f"b{k}"] = [ends.get(g, 0.0) for g in gids]
            cols[f"lo{k}"] = [lv.get(g, (0, 0))[0] for g in gids]
            cols[f"hi{k}"] = [lv.get(g, (0, 0))[1] for g in gids]
            big.append(sum(_estimate(self, g, *br[g]) for g in br) > _WHOLE_ROWS)
        # rows above every bracket need not be read either when the buckets count them
        cut = (
            bucket_ceiling([self.buckets[g] for g in gids], top)
            if all(g in self.buckets for g in gids)
            else None
        )
        self._ceiling = math.inf if cut is None else cut[0]
        if cut is not None:  # n: the rows at or below the ceiling
            cols["n"] = [n - above for n, above in zip(cols["n"], cut[1], strict=True)]
        self._upto = dict(zip(gids, cols["n"], strict=True))
        arrays = {
            c: np.asarray(
                v, dtype=np.int64 if c in ("gid", "n") or c[:2] in ("lo", "hi") else np.float64
            )
            for c, v in cols.items()
        }
        self.con.register("dpsense_br_obj", arrays)
        keyed = (
            f"SELECT k.* EXCLUDE (gid), o.* FROM dpsense_br_obj o JOIN ({self.raw.keys}) k "
            "USING (gid)"
            if self.raw.keys is not None
            else "SELECT * FROM dpsense_br_obj"
        )
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE dpsense_br AS {keyed}")
        self.con.unregister("dpsense_br_obj")
        return gids, arrays, big, floor

    def _scan_brackets(
        self, nk: int, big: list[bool], floor: float, pad: int
    ) -> tuple[dict[int, tuple[Any, ...]], dict[int, F64]]:
        """One pass over the rows at or above ``floor`` (and at or below the ceiling the
        buckets allow: ``pass_cells.bucket_ceiling``): by group, each level's count
        below its bracket, and for a large level its bracket's size, offset and sorted
        slice around the window ranks; the rows inside the small brackets by group."""
        small = [k for k in range(nk) if not big[k]]
        # #{x < a} = n - #{x >= a}: the rows below every bracket are counted by the first
        # pass's n and need not be read (the scan filters them as it reads the column)
        inner = [f"count(*) FILTER (WHERE s.x >= r.a{k})::BIGINT AS c{k}" for k in range(nk)]
        under = [f"(r.n - b.c{k})" for k in range(nk)]
        outer = [f"{under[k]}::BIGINT" for k in range(nk)]
        if small:  # one list: the rows inside any small bracket (split in numpy)
            union = " OR ".join(f"(s.x >= r.a{k} AND s.x <= r.b{k})" for k in small)
            inner.append(f"list(s.x) FILTER (WHERE {union}) AS lu")
            outer.append("b.lu")
        for k in range(nk):
            if big[k]:
                start = f"greatest(r.lo{k} - {under[k]} - {pad}, 0)::BIGINT"
                inner.append(f"list(s.x) FILTER (WHERE s.x >= r.a{k} AND s.x <= r.b{k}) AS l{k}")
                outer.append(
                    f"len(b.l{k})::BIGINT, {start}, "
                    f"list_slice(list_sort(b.l{k}), {start} + 1, "
                    f"r.hi{k} - {under[k]} + 1 + {pad})"
                )
        on = ", ".join(self.raw.on)
        rows = self.raw.sql
        tests = [f"x >= {floor!r}::DOUBLE"] if -math.inf < floor < math.inf else []
        if self._ceiling < math.inf:
            tests.append(f"x <= {self._ceiling!r}::DOUBLE")
        if tests:
            rows = f"SELECT * FROM ({rows}) WHERE {' AND '.join(tests)}"
        self.con.execute(
            "CREATE OR REPLACE TEMP TABLE dpsense_win AS "
            f"WITH b AS (SELECT r.gid, {', '.join(inner)} FROM ({rows}) s "
            f"JOIN dpsense_br r USING ({on}) GROUP BY r.gid) "
            f"SELECT b.gid, {', '.join(outer)} FROM b JOIN dpsense_br r USING (gid)"
        )
        self.queries += 1
        got = self.con.execute(
            "SELECT * EXCLUDE (lu) FROM dpsense_win" if small else "SELECT * FROM dpsense_win"
        ).fetchall()
        gap = (None,) if small else ()  # where the list column was
        found = {int(r[0]): (*r[1 : nk + 1], *gap, *r[nk + 1 :]) for r in got}
        inside: dict[int, F64] = {}
        if small:  # the small brackets' rows as two numpy columns (no Python floats)
            flat = self.con.execute("SELECT gid, unnest(lu) AS x FROM dpsense_win").fetchnumpy()
            inside = split_by_group(
                np.asarray(flat["gid"], dtype=np.int64), np.asarray(flat["x"], dtype=np.float64)
            )
        self.con.execute("DROP TABLE dpsense_win")
        return found, inside

    def _histogram(self, gid: int) -> tuple[F64, I64]:
        """One group's distinct values (sorted) and their multiplicities."""
        if self._loaded and self._has_held_table():
            got = self.con.execute(
                "SELECT v, c FROM dpsense_held WHERE gid = ? ORDER BY v", [gid]
            ).fetchnumpy()
        else:
            got = self.con.execute(
                f"SELECT v, count(*)::BIGINT AS c FROM ({self.stage}) WHERE gid = ? "
                "GROUP BY v ORDER BY v",
                [gid],
            ).fetchnumpy()
            self.queries += 1
        return np.asarray(got["v"], dtype=np.float64), np.asarray(got["c"], dtype=np.int64)

    def _has_held_table(self) -> bool:
        """The held histogram survives between a query's statistics unless dropped."""
        row = self.con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE temporary AND table_name = 'dpsense_held'"
        ).fetchone()
        return bool(row and row[0])

    def count(self, gid: int, op: str, v: float) -> int:
        row = self.con.execute(
            f"SELECT count(*) FROM ({self.stage}) WHERE gid = ? AND v {op} ?", [gid, float(v)]
        ).fetchone()
        self.queries += 1
        return int(row[0]) if row is not None else 0

    def preset_counts(self, points: F64, counts: dict[int, I64]) -> None:
        """Counts below ``points`` taken in the engine's first pass (``pass_cells``): served
        by :meth:`counts_below` for exactly these points (a group absent had no rows)."""
        zero = np.zeros(points.size, dtype=np.int64)
        self._below[tuple(float(c) for c in points)] = {g: counts.get(g, zero) for g in self.sizes}

    def counts_below(self, gid: int, points: F64) -> I64:
        """One pass answers every held group (an interval's points are the same for all of
        them: the statistic's bounds), cached by the points (``cells.counts_below_all``),
        unless the first pass counted them (:meth:`preset_counts`)."""
        key = tuple(float(c) for c in points)
        if key not in self._below:
            got, queries = counts_below_all(self.con, self.raw, sorted(self.sizes), points)
            self.queries += queries
            self._below[key] = got
        return self._below[key].get(gid, np.zeros(points.size, dtype=np.int64))

    def values(self, gid: int) -> F64:
        """Every record of the group, sorted. The first call builds the histogram of every
        held group in one pass; the histograms then leave DuckDB, sorted, for runs
        of consecutive groups of at most ``BATCH_ROWS`` rows at a time (the methods ask
        for the groups in increasing order), each group rebuilt from its histogram."""
        if gid not in self._chunk:
            self._load_chunk(gid)
        values, counts = self._chunk[gid]
        return np.repeat(values, counts)

    def _load_chunk(self, gid: int) -> None:
        if not (self._loaded and self._has_held_table()):
            self.con.execute(
                "CREATE OR REPLACE TEMP TABLE dpsense_held AS SELECT gid, v, count(*)::BIGINT "
                f"AS c FROM ({self.stage}) WHERE gid IN ({self._held()}) GROUP BY ALL"
            )
            self.queries += 1
            self._loaded = True
            got = self.con.execute("SELECT gid, count(*) FROM dpsense_held GROUP BY gid")
            self._held_distinct = {int(g): int(d) for g, d in got.fetchall()}
        order = sorted(self.sizes)
        i = order.index(gid)
        j, total = i, 0
        while j < len(order) and (
            j == i or total + self._held_distinct.get(order[j], 0) <= BATCH_ROWS
        ):
            total += self._held_distinct.get(order[j], 0)
            j += 1
        got = self.con.execute(
            "SELECT gid, v, c FROM dpsense_held WHERE gid BETWEEN ? AND ? ORDER BY gid, v",
            [order[i], order[j - 1]],
        ).fetchnumpy()
        self.queries += 1
        gids = np.asarray(got["gid"], dtype=np.int64)
        values = np.asarray(got["v"], dtype=np.float64)
        counts = np.asarray(got["c"], dtype=np.int64)
        self._chunk = {}
        for g in order[i:j]:
            lo, hi = np.searchsorted(gids, g, "left"), np.searchsorted(gids, g, "right")
            self._chunk[g] = (values[lo:hi], counts[lo:hi])

    def grid_sum(self, gid: int, grid: RecordGrid) -> int:
        lower, upper = self.bounds or (None, None)
        return self._sum(gid, *grid_sum_sql(grid, lower, upper))

    def quanta_sum(self, gid: int, lower: float, upper: float, quanta: int) -> int:
        return self._sum(gid, *quanta_sum_sql(lower, upper, quanta))

    def preset_sums(self, key: tuple[Any, ...], sums: dict[int, int]) -> None:
        """Sums computed in the engine's first pass (the same SQL as :meth:`_sum`)."""
        self._sums[key] = sums

    def _sum(self, gid: int, key: tuple[Any, ...], k: str) -> int:
        """sum(k(v)) per held group, exactly (HUGEINT, as text); one query for all."""
        if key not in self._sums:
            got = self.con.execute(
                f"SELECT gid, sum({k})::HUGEINT::VARCHAR AS s FROM ({self.stage}) "
                f"WHERE gid IN ({self._held()}) GROUP BY gid"
            ).fetchall()
            self.queries += 1
            self._sums[key] = {int(g): int(s) for g, s in got}
        return self._sums[key].get(gid, 0)


def _estimate(groups: DuckGroups, gid: int, a: float, b: float) -> float:
    """The sample's estimate of the rows of group ``gid`` in [a, b], or its buckets'
    (speed only)."""
    if gid not in groups.samples and gid in groups.buckets:
        rows, small, large = groups.buckets[gid]
        clip = groups.raw.clip
        return float(rows[(clip(large) >= a) & (clip(small) <= b)].sum())
    values, counts = groups.samples.get(gid, (np.zeros(0), np.zeros(0, dtype=np.int64)))
    total = int(counts.sum())
    n = groups.sizes[gid]
    if total == 0:
        return float(n)
    inside = counts[(values >= a) & (values <= b)].sum()
    return float(n) * (float(inside) + 2.0) / total


class DuckGroup(HeldGroup):
    """One held group, answered by DuckDB."""
