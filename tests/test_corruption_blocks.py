"""A block as a worker gets and hands it back (`corruptions.blocks`): the source records as Arrow, read back as the
very dicts, and each source's made records as Arrow, which the driver writes as the very Parquet bytes a table
built from the records themselves gives."""

from __future__ import annotations

import io
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cohbench.corruptions import blocks, recipes
from cohbench.corruptions.ray_engine import _in_order
from cohbench.errors import CorruptionError
from cohbench.encoder import CPU
from cohbench.schema import ARROW_SCHEMA, empty_record


def _story(number: int, sentences: int) -> dict:
    record = empty_record()
    record.update(id=f"story-{number}", corpus="mine", config="synthetic", split="train", doc_id=f"story-{number}",
                  sentences=[f"Tom walked to shop number {number}, step {s}." for s in range(sentences)],
                  sentence_labels=[0] * sentences)
    return record


def _parquet(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def test_blocks_handed_back_as_arrow_write_the_bytes_of_the_records_themselves():
    resolved = recipes.resolve("synthetic", {})
    sources = [_story(0, 5), _story(1, 1), _story(2, 6), _story(3, 4), _story(4, 5)]  # story 1 is too short to swap
    outputs, _ = recipes.apply(resolved, sources, None, CPU)
    records = [record for out in outputs for record in out]
    # a partition gathered from two blocks, as the Ray driver gathers it
    made = pa.chunked_array([blocks.run(resolved, sources[:2], None, CPU), blocks.run(resolved, sources[2:], None, CPU)],
                            blocks.made_type())

    table = blocks.made_table(made)
    assert table.schema.equals(ARROW_SCHEMA, check_metadata=True)
    assert all(column.num_chunks == 1 for column in table.columns)  # Parquet cuts pages where chunks end
    assert table.to_pylist() == records
    assert _parquet(table) == _parquet(pa.Table.from_pylist(records, schema=ARROW_SCHEMA))
    assert blocks.made_per_source(made) == [len(out) for out in outputs] == [2, 0, 2, 2, 2]
    assert blocks.generators_used(table) == Counter(r["corruption"]["generator"] for r in records if r["corruption"])
    assert blocks.generators_used(table) == {"next_sentence_swap": 4}  # the unaltered halves of the pairs not counted


def test_source_records_handed_to_a_worker_as_arrow_come_back_as_the_same_dicts_and_make_the_same_records():
    odd = _story(5, 3)
    odd.update(sentences=["Zoë said \u201chi\u201d.", "", "\U0001f600 then a tab\tand a newline\n."], doc_id=None)
    sources = [_story(0, 5), _story(1, 1), odd, _story(3, 0)]
    array = blocks.records_array(sources)
    back = blocks.records_of(pa.chunked_array([array[:2], array[2:]]))  # a block's column, as Ray hands it over
    assert back == sources and [list(r) for r in back] == [list(r) for r in sources]
    resolved = recipes.resolve("synthetic", {})
    assert recipes.apply(resolved, back, None, CPU) == recipes.apply(resolved, sources, None, CPU)


def test_a_block_that_made_nothing_is_an_empty_table_in_the_schema():
    made = blocks.run(recipes.resolve("synthetic", {}), [_story(1, 1)], None, CPU)
    table = blocks.made_table(made)
    assert blocks.made_per_source(made) == [0] and table.num_rows == 0
    assert _parquet(table) == _parquet(pa.Table.from_pylist([], schema=ARROW_SCHEMA))
    assert blocks.generators_used(table) == {}


def test_a_partition_back_from_ray_in_pieces_out_of_order_is_put_in_source_order_or_refused():
    resolved = recipes.resolve("synthetic", {})
    sources = [_story(n, 5) for n in range(5)]

    def piece(first: int, last: int) -> pa.Table:
        return pa.table({"partition": pa.array([0] * (last - first), pa.int64()),
                         "index": pa.array(range(first, last), pa.int64()),
                         "made": blocks.run(resolved, sources[first:last], None, CPU)})

    in_order = blocks.made_table(_in_order([piece(0, 2), piece(2, 5)], 0))
    assert blocks.made_table(_in_order([piece(2, 5), piece(0, 2)], 0)).equals(in_order)
    assert in_order.equals(blocks.made_table(blocks.run(resolved, sources, None, CPU)))  # as one block would give it
    with pytest.raises(CorruptionError, match="partition 0's sources other than once each"):
        _in_order([piece(0, 2), piece(1, 5)], 0)
    with pytest.raises(CorruptionError, match="partition 0's sources other than once each"):
        _in_order([piece(0, 2), piece(3, 5)], 0)
