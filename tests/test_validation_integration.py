"""The real StorySumm build from the mirror passes validation against its committed expected statistics."""

import pytest

from cohbench.release.build import build
from cohbench.validation import validate


@pytest.mark.integration
def test_the_storysumm_release_passes_its_suites_and_recorded_statistics(mirror, workspace):
    build("storysumm", progress=False)
    report = validate(["storysumm"], docs=False)
    assert report["ok"], report["configs"]["storysumm"]["line"]
    assert report["configs"]["storysumm"]["records"] == 96
    stats = next(r for r in report["configs"]["storysumm"]["results"] if r["table"] == "storysumm.stats")
    assert stats["success"] and stats["rows_checked"] > 30  # every recorded statistic was compared
