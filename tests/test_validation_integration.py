"""The real StorySumm build from the mirror passes validation against its committed expected statistics and is the
version `catalog/versions/` declares."""

import pytest

from cohbench import settings
from cohbench.release.build import build
from cohbench.validation import validate


@pytest.mark.integration
def test_the_storysumm_release_passes_its_suites_and_recorded_statistics(mirror, workspace, monkeypatch):
    monkeypatch.setenv("COHBENCH_VERSIONS", str(settings.project_root() / "catalog/versions"))  # the committed declarations
    build("storysumm", progress=False)
    report = validate(["storysumm"], docs=False)
    assert report["ok"], report["configs"]["storysumm"]["line"]
    assert report["configs"]["storysumm"]["records"] == 96
    stats = next(r for r in report["configs"]["storysumm"]["results"] if r["table"] == "storysumm.stats")
    assert stats["success"] and stats["rows_checked"] > 30  # every recorded statistic was compared
    version = next(r for r in report["configs"]["storysumm"]["results"] if r["table"] == "storysumm.version")
    assert version["success"] and version["bump"] is None
