"""The report: PNG plots of the expected size with something drawn in them, and an HTML page."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from emulator.pipeline.report import PIXELS, report


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", path
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def written(swept, tmp_path_factory):
    return report(swept.rollup.out_dir, tmp_path_factory.mktemp("report"))


def test_report_writes_every_plot_at_the_expected_size(written, swept):
    names = sorted(Path(p).name for p in written.pngs)
    runs = sorted(f"usage_{Path(d).name}.png" for d in swept.run_dirs)
    assert names == sorted(["usage_range.png", "unloads.png", "unavailable.png", *runs])
    for p in map(Path, written.pngs):
        assert png_size(p) == PIXELS, p


def test_plots_are_not_blank(written):
    import matplotlib.image as mpimg
    import numpy as np

    for p in written.pngs:
        pixels = mpimg.imread(p)[..., :3]
        colourful = np.abs(pixels - pixels.mean(axis=2, keepdims=True)).max(axis=2) > 0.1
        assert colourful.mean() > 0.002, f"{p}: nothing plotted"  # lines/bars in colour, not just axes


def test_html_page_shows_tables_and_plots(written, swept):
    page = Path(written.html).read_text()
    assert page.startswith("<!DOCTYPE html>")
    for p in written.pngs:
        assert f'src="{Path(p).name}"' in page
    for row in swept.rollup.comparison:
        assert row["config"] in page
    assert page.count("<table>") == 2 and "±" in page
    for d in swept.run_dirs:
        assert Path(d).name in page


def test_report_of_a_folder_that_is_not_a_rollup(tmp_path):
    with pytest.raises(ValueError, match="rollup_dir = .*no csv/runs table"):
        report(tmp_path)


def test_report_of_a_sweep_folder_reads_its_rollup(swept, written, tmp_path):
    """`report sweep/` as the README writes it: the sweep's --out folder, whose rollup/ is the roll-up."""
    assert Path(swept.rollup.out_dir) == Path(swept.out_dir) / "rollup"
    from_sweep = report(swept.out_dir, tmp_path / "r")
    assert sorted(Path(p).name for p in from_sweep.pngs) == sorted(Path(p).name for p in written.pngs)
