"""The one seam between a job and where a resolved recipe runs: in this process (`LocalEngine`) or on Ray
(`ray_engine.RayEngine`), both with the same interface:

    engine = engines.start(resolved, "local", device="auto")   # or "ray", with address and workers
    texts_split = engine.split_sentences(texts)
    engine.start_up()                           # what the work needs in this process, loaded
    engine.run(todo, shared, finished)          # finished(number, made) per partition of `todo` (`blocks`)
    engine.close()

An engine runs one resolved recipe. `device` (auto, cpu, cuda) says where the encoder, BM25 and BERTScore's matching
run: `start` makes it the one `encoder.Device` that travels down, checked when the engine starts (here, or against
what the recipe asks of a Ray cluster), before anything is written,
and never changes the bytes made (float64, then rounded: `encoder`). Every random choice depends on (seed, record
id) only, so every engine gives the same output."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..encoder import Device
from ..errors import CorruptionError
from . import blocks, recipes

ENGINES = ("local", "ray")


class LocalEngine:
    """Partitions one after another in this process, the encoder on `device`."""

    def __init__(self, resolved: recipes.Resolved, device: Device):
        self.resolved = resolved
        self.device = device.usable_here()

    def split_sentences(self, texts: list[str]) -> list[list[str]]:
        from ..text import split_sentences

        return split_sentences(texts)

    def start_up(self) -> None:
        """Load the encoder here now, where the recipe uses the device, so that the work after it is work."""
        if self.resolved.recipe.on_device:
            from ..encoder import load

            load(self.device)

    def run(self, todo: Sequence[tuple[int, list[dict]]], shared, finished: Callable[[int, object], None]) -> None:
        for number, batch in todo:
            finished(number, blocks.run(self.resolved, batch, shared, self.device))

    def close(self) -> None:
        pass


def start(resolved: recipes.Resolved, engine: str, device: str = "auto", address: str | None = None,
          workers: int | None = None):
    """An engine for `resolved`, started: a device or cluster that cannot serve the request is refused here, in one
    line."""
    if engine not in ENGINES:
        raise CorruptionError(f"unknown engine {engine!r}; choose {' or '.join(ENGINES)}")
    device = Device.requested(device)
    if engine == "local":
        return LocalEngine(resolved, device)
    from .ray_engine import RayEngine

    return RayEngine(resolved, address, workers, device)
