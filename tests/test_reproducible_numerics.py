"""Every command runs the encoder and the baseline on the same CPU code paths (MKL and ATen pinned to AVX2), so a
release rebuilt on another CPU has the same bytes; a user's own setting of those variables stays."""

import os

from cohbench import cli, numerics


def test_the_cli_pins_mkl_and_aten_to_one_code_path(monkeypatch, capsys):
    for name in numerics.PINNED:
        monkeypatch.delenv(name, raising=False)
    assert cli.main(["list"]) == 0
    assert {name: os.environ.get(name) for name in numerics.PINNED} == {"MKL_CBWR": "AVX2,STRICT", "ATEN_CPU_CAPABILITY": "avx2"}


def test_a_code_path_the_user_chose_is_kept(monkeypatch, capsys):
    monkeypatch.setenv("MKL_CBWR", "COMPATIBLE")
    monkeypatch.delenv("ATEN_CPU_CAPABILITY", raising=False)
    assert cli.main(["list"]) == 0
    assert os.environ["MKL_CBWR"] == "COMPATIBLE" and os.environ["ATEN_CPU_CAPABILITY"] == "avx2"
