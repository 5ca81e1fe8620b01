"""The privacy report: one offline HTML page of a ledger, checked in a real browser."""

from __future__ import annotations

import hashlib
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.cli import main
from dpsense.cli.tables_io import shown_value
from dpsense.noise.rng import SeededRandom
from dpsense.report import render_report
from dpsense.report.model import format_number
from tests.pages.browser import open_page

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")

FIXTURES = Path(__file__).parents[1] / "accounting" / "fixtures"
SHOT = Path("/tmp/report_shot.png")
# raw values with at most 6 significant digits (the report's format), far from any
# released value: found in the page only if a record leaked
RAW = (101.234, 103.456, 105.678, 194.321, 196.543, 198.765, 199.135)
REGIONS = ("north", "south", "east", "west")


def _table(n: int = 300) -> dict[str, list[Any]]:
    return {
        "person": [f"person{i // 3}" for i in range(n)],
        "region": [REGIONS[i % 4] for i in range(n)],
        "income": [RAW[i % 7] if i % 10 == 0 else 100.0 + (i * 7.31) % 100 for i in range(n)],
    }


def _ledger(path: Path) -> tuple[list[ds.Release], ds.GroupedRelease]:
    """A grouped per-person median, a mean and a refused propose-test-release."""
    acct = ds.Accountant(epsilon=2.0, delta=1e-5, ledger=path)
    x = _table()
    # the income of a person (3 rows at most) in incomes.csv
    per_person: dict[str, Any] = {
        "column": "income",
        "privacy_unit": "person",
        "max_rows_per_unit": 3,
        "dataset": "incomes.csv",
    }
    grouped = acct.release(
        x,
        ds.Median(100, 200, resolution=0.01),
        by="region",
        keys=list(REGIONS),
        epsilon=0.5,
        rng=SeededRandom(1),
        **per_person,
    )
    mean = acct.release(x, ds.Mean(100, 200), epsilon=0.5, rng=SeededRandom(2), **per_person)
    refused = acct.release(
        x,
        ds.Median(100, 200),
        column="income",
        epsilon=0.3,
        delta=1e-6,
        method="ptr",
        bound=0.001,  # far too small for spread data: the test refuses
        rng=SeededRandom(3),
        dataset="incomes.csv",
    )
    assert isinstance(grouped, ds.GroupedRelease)
    assert isinstance(mean, ds.Release)
    assert isinstance(refused, ds.Release)
    assert refused.refused
    return [mean, refused], grouped


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.browser
def test_the_report_of_a_ledger_in_a_browser(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = tmp_path / "budget.db"
    (mean, _), grouped = _ledger(ledger)
    digest = _digest(ledger)
    out = tmp_path / "report.html"
    assert main(["report", str(ledger), "-o", str(out)]) == 0
    assert "report.html" in capsys.readouterr().out
    assert _digest(ledger) == digest  # the ledger is only read
    with open_page(out, screenshot=SHOT) as opened:
        assert opened.console_errors == []
        assert opened.page_errors == []
        assert opened.outside_requests(out) == []
        figures = opened.drawn_figures()
        assert len(figures) == 2  # the spending over time, the grouped median
        assert all(w > 100 and h > 100 for w, h in figures)
        text = opened.text()
    shown = [shown_value(mean)] + [shown_value(rel) for _, rel in grouped]
    for value in shown:
        assert value in text
    for region in REGIONS:
        assert region in text
    assert "refused" in text
    assert "each person" in text  # the privacy unit, in words
    assert "adding or removing" in text
    assert "Approximate differential privacy" in text
    for raw in RAW:
        assert f"{raw:g}" not in text
        assert f"{raw:g}" not in out.read_text()


@pytest.mark.browser
def test_the_report_reads_on_a_phone(tmp_path: Path) -> None:
    """At 390 px nothing sticks out of the page (wide tables and figures scroll inside their
    box) and the figures' text stays readable (at least 7 px tall as drawn)."""
    ledger = tmp_path / "budget.db"
    _ledger(ledger)
    out = tmp_path / "report.html"
    assert main(["report", str(ledger), "-o", str(out)]) == 0
    with open_page(out, screenshot=tmp_path / "phone.png", width=390, height=844) as opened:
        scroll, window = opened.page_width()
        assert scroll <= window, (scroll, window)
        assert opened.figure_font_px() >= 7.0
        assert opened.console_errors == []


def test_an_in_memory_accountant_has_a_report_too(tmp_path: Path) -> None:
    acct = ds.Accountant(rho=0.5, delta=1e-6)
    rel = acct.release(np.array(RAW), ds.Count(), epsilon=0.5, rng=SeededRandom(4))
    out = ds.report(acct, tmp_path / "r.html")
    html = out.read_text()
    assert "in-memory Accountant" in html
    assert f"count = {shown_value(rel)}" in html
    assert "Zero-concentrated differential privacy" in html
    assert "of the total rho is spent" in html  # rhos add up; their epsilons do not
    assert "<script" not in html  # nothing runs in the page


def test_labels_are_escaped(tmp_path: Path) -> None:
    acct = ds.Accountant(epsilon=1.0)
    acct.release(np.array(RAW), ds.Count(), epsilon=0.5, dataset="<script>alert(1)</script>")
    html = render_report(acct)
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_a_ledger_written_before_the_release_log_has_a_report(tmp_path: Path) -> None:
    ledger = tmp_path / "v2.db"
    shutil.copyfile(FIXTURES / "ledger_v2_basic.db", ledger)
    digest = _digest(ledger)
    html = render_report(ledger)
    assert "before the release log" in html
    assert "No answer was recorded" in html  # the direct charge
    assert _digest(ledger) == digest  # reading neither migrates nor writes


@pytest.mark.parametrize(
    ("case", "fragment"),
    [
        ("missing", "No ledger file"),
        ("corrupt", "not a dpsense ledger"),
        ("folder", "does not exist"),
        ("directory", "is a folder"),
        ("suffix", "--output must name an .html file"),
    ],
)
def test_bad_ledgers_and_outputs_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, fragment: str
) -> None:
    ledger, out = tmp_path / "budget.db", tmp_path / "report.html"
    if case != "missing":
        ds.Accountant(epsilon=1.0, ledger=ledger)
    if case == "corrupt":
        ledger.write_bytes(b"not a database at all" * 100)
    if case == "folder":
        out = tmp_path / "nope" / "report.html"
    if case == "directory":
        out = tmp_path
    if case == "suffix":
        out = tmp_path / "report.txt"
    assert main(["report", str(ledger), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert fragment in err
    assert "Traceback" not in err
    assert not (tmp_path / "report.html").exists()
    assert not (tmp_path / "report.txt").exists()


def test_one_charge_of_several_named_statistics_shows_each(tmp_path: Path) -> None:
    """The hook for a query: one charge, its outputs built by outputs_of from a mapping."""
    from dpsense.accounting import Ledger
    from dpsense.accounting.release_log import outputs_of

    path = tmp_path / "q.db"
    ledger = Ledger.create(path, epsilon=1.5)
    x = _table()
    mean = ds.release(np.array(RAW), ds.Count(), epsilon=0.25, rng=SeededRandom(1))
    grouped = ds.release(
        x, ds.Count(), by="region", keys=list(REGIONS), epsilon=0.25, rng=SeededRandom(2)
    )
    charge = ledger.charge(0.5, statistic="query", method="query")
    outputs = outputs_of({"people": mean, "per_region": grouped}, column={"people": None})
    ledger.record_outcome(charge, refused=False, outputs=outputs)
    html = render_report(path)
    assert "people (count)" in html
    assert "per_region (count) by region" in html
    assert html.count("<svg") == 2  # the spending chart and the grouped count
    for _, rel in grouped:
        assert f"<td>{shown_value(rel)}</td>" in html
    # a query through the Accountant: one charge, every statistic on the page
    acct = ds.Accountant(ledger=path)
    res = acct.release(
        x,
        {"n": ds.Count(), "mid": ("income", ds.Median(100, 200))},
        by="region",
        keys=list(REGIONS),
        privacy_unit="person",
        max_rows_per_unit=3,
        epsilon=0.5,
        rng=SeededRandom(3),
        where="income > 100",
    )
    html = render_report(path)
    assert "#2 n (count) by region and 1 more" in html
    assert "mid (median) of income by region" in html
    assert "where <code>income &gt; 100</code>" in html
    for name in ("n", "mid"):
        for _, rel in res[name]:
            assert f"<td>{shown_value(rel)}</td>" in html
    # each statistic's share of the query, its bounds' source and how its intervals were
    # built; each group's 95% interval
    assert html.count("share of the query") >= 2
    assert "50% of its epsilon" in html
    assert "given by the analyst" in html
    assert "two more quantiles at ranks moved outward, 0.15 of the statistic" in html
    for _, rel in res["n"]:
        low, high = rel.interval()
        assert f"[{format_number(low)}, {format_number(high)}]" in html
    found = acct.release(x, ds.Median(), column="income", bounds="private", epsilon=0.5,
                         rng=SeededRandom(4))  # fmt: skip
    html = render_report(path)
    assert "found privately, with 0.3 of epsilon (epsilon 0.15), before the release" in html
    assert found.interval() is not None


def test_the_guarantee_in_words() -> None:
    from dpsense.report.model import guarantee_words

    person = {"kind": "pure", "neighbours": "add-remove", "privacy_unit": "person"}
    person |= {"max_rows_per_unit": 3, "max_groups_per_unit": 2}
    alone = guarantee_words(person, 0.5, 0.0, None)
    assert "each person" in alone
    assert "at most 3 rows;" in alone  # no groups in an ungrouped release
    assert "Pure differential privacy, epsilon = 0.5" in alone
    assert "1.65 times" in alone  # e^0.5
    grouped = guarantee_words(person, 0.5, 0.0, None, grouped=True)
    assert "at most 3 rows per group and to at most 2 groups" in grouped
    row = {"kind": "approximate", "neighbours": "substitute", "privacy_unit": None}
    words = guarantee_words(row, 1.0, 1e-6, None)
    assert "each row of the data" in words
    assert "number of rows is treated as public" in words
    assert "except with probability at most 1e-06" in words
    zcdp = guarantee_words({"kind": "zcdp", "neighbours": "add-remove"}, 1.0, 0.0, 0.125)
    assert "Zero-concentrated differential privacy with rho = 0.125" in zcdp


def test_a_ledger_object_works_and_other_sources_are_refused(tmp_path: Path) -> None:
    from dpsense.accounting import Ledger

    path = tmp_path / "l.db"
    ds.Accountant(epsilon=1.0, ledger=path).release(
        np.array(RAW), ds.Count(), epsilon=0.5, rng=SeededRandom(1)
    )
    assert "count = " in render_report(Ledger.open(path))
    with pytest.raises(ds.InputError, match="ledger path, a Ledger or an Accountant"):
        render_report(42)


def test_each_release_has_a_csv_download_and_a_call_that_reproduces_it(tmp_path: Path) -> None:
    import base64
    import html as html_module
    import io
    import re
    import warnings

    pd = pytest.importorskip("pandas")
    ledger = tmp_path / "budget.db"
    (mean, _), grouped = _ledger(ledger)
    out = tmp_path / "report.html"
    assert main(["report", str(ledger), "-o", str(out)]) == 0
    page = out.read_text()
    links = re.findall(
        r'download="release-(\d+).csv" href="data:text/csv;charset=utf-8;base64,([^"]+)"', page
    )
    assert len(links) == 3  # one per charge
    tables = {int(n): pd.read_csv(io.BytesIO(base64.b64decode(b))) for n, b in links}
    first = tables[1]
    assert list(first.columns[:2]) == ["statistic", "region"]
    assert list(first["region"]) == list(REGIONS)
    assert list(first["value"]) == pytest.approx([rel.value for _, rel in grouped])
    assert tables[2]["value"].tolist() == pytest.approx([mean.value])
    assert bool(tables[3]["refused"].iloc[0])
    codes = [
        html_module.unescape(c) for c in re.findall(r"<pre><code>(.*?)</code></pre>", page, re.S)
    ]
    assert len(codes) == 3
    namespace: dict[str, Any] = {"data": _table()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(codes[0], namespace)  # the grouped median again, with fresh noise
    again = namespace["release"]
    assert isinstance(again, ds.GroupedRelease)
    assert [key for key, _ in again] == [key for key, _ in grouped]
    assert again.epsilon == grouped.epsilon
    exec(codes[1], namespace)
    assert namespace["release"].method == mean.method
    for raw in RAW:
        assert f"{raw:g}" not in "".join(codes)


def test_the_reproducing_call_rebuilds_every_statistic(tmp_path: Path) -> None:
    import html as html_module
    import re
    import warnings

    x = np.random.default_rng(0).lognormal(3, 1, 2000)
    acct = ds.Accountant(epsilon=5.0, ledger=tmp_path / "b.db")
    query = {
        "m": ds.Mean(0, 100), "q": ds.Quantile(0.9, 0, 100), "qs": ds.Quantiles([0.1, 0.5], 0, 100),
        "t": ds.TrimmedMean(5, 0, 100), "v": ds.Variance(0, 100), "s": ds.Std(0, 100),
        "c": ds.Count(), "u": ds.Sum(0, 100),
    }  # fmt: skip
    acct.release(x, query, epsilon=1.0, rng=SeededRandom(5))
    acct.release(x, ds.Median(), epsilon=1.0, bounds="private", rng=SeededRandom(6))
    out = ds.report(acct, tmp_path / "r.html")
    codes = re.findall(r"<pre><code>(.*?)</code></pre>", out.read_text(), re.S)
    assert len(codes) == 2
    for code in codes:
        namespace: dict[str, Any] = {"data": x}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(html_module.unescape(code), namespace)
        assert namespace["release"].epsilon == 1.0
    assert "make_statistic" not in "".join(codes)
    assert 'bounds="private"' in html_module.unescape(codes[1])


def test_the_report_shows_numbers_to_their_accuracy(tmp_path: Path) -> None:
    """A value shows the digits its 95% interval gives (the interval rounded outward),
    privately found bounds the powers of two they are, the noise scale three digits; the
    CSV download keeps every digit."""
    import base64
    import io
    import re

    pd = pytest.importorskip("pandas")
    acct = ds.Accountant(epsilon=2.0)
    values = np.linspace(1.0, 900.0, 400)
    rel = acct.release(values, ds.Mean(), bounds="private", epsilon=1.0, rng=SeededRandom(5))
    assert isinstance(rel, ds.Release)
    page = render_report(acct)
    low, high = rel.interval()
    shown = re.search(
        r"mean = ([-0-9.]+) <span class=\"muted\">95% interval \[([-0-9.]+), ([-0-9.]+)\]", page
    )
    assert shown is not None, page
    value, a, b = (float(g) for g in shown.groups())
    half = (high - low) / 2
    step = 10.0 ** -(1 - math.floor(math.log10(half)))  # two significant digits of it
    assert abs(value - rel.value) <= step / 2 + 1e-9
    assert a <= low  # rounded outward
    assert b >= high
    assert high - low < b - a <= high - low + 2 * step
    assert "clipping bounds</th><td>[2^" in page
    scale = re.search(r"noise scale</th><td>([0-9.]+)", page)
    assert scale is not None
    assert len(scale.group(1).replace(".", "").lstrip("0")) <= 3
    link = re.search(r'base64,([^"]+)"', page)
    assert link is not None
    table = pd.read_csv(io.BytesIO(base64.b64decode(link.group(1))))
    assert table["value"].tolist() == [rel.value]  # every digit
