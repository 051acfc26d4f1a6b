"""`cohbench corrupt --engine ray` on a local 2-CPU instance: the same bytes as in one process, whatever the
number of workers, the partitioning, or a confounder pool sharded through the object store; texts split by
Ray actors as in one process."""

from __future__ import annotations

from cohbench import cli

from test_corrupt_command import STORIES, data_bytes, summary


def run(out, *args) -> tuple[dict, dict]:
    assert cli.main(["corrupt", str(STORIES), "--recipe", "dsd", "--out", str(out), "--splits", "train=0.7,test=0.3",
                     "--k", "2", "--json", "--keep-test-overlap", *map(str, args)]) == 0
    return data_bytes(out), summary(out, "dsd")


def test_ray_gives_the_in_process_bytes_whatever_workers_partitions_and_pool_shards(ray_local, workspace):
    in_process = run(workspace / "local", "--partition-size", 3)
    assert in_process[1]["built_records"] >= 6 and in_process[1]["parameters"]["k"] == 2
    assert run(workspace / "ray2", "--engine", "ray", "--workers", 2, "--partition-size", 2) == in_process
    assert run(workspace / "ray1", "--engine", "ray", "--workers", 1, "--partition-size", 5) == in_process

    sharded_local = run(workspace / "sharded-local", "--pool-shards", 3)
    sharded_ray = run(workspace / "sharded-ray", "--pool-shards", 3, "--engine", "ray", "--workers", 2, "--partition-size", 2)
    assert sharded_ray == sharded_local
    assert sharded_local[0] == in_process[0]  # per-shard top-k merged = the whole index's top-k on this pool


def test_texts_split_on_ray_give_the_in_process_bytes(ray_local, workspace):
    import json

    texts = workspace / "texts.jsonl"
    texts.write_text("".join(json.dumps({"id": r["id"], "text": " ".join(r["sentences"])}) + "\n"
                             for r in map(json.loads, STORIES.read_text().splitlines())))
    runs = []
    for engine in ("local", "ray"):
        out = workspace / engine
        assert cli.main(["corrupt", str(texts), "--recipe", "msd", "--out", str(out), "--json", "--keep-test-overlap",
                         "--engine", engine, "--workers", "2"]) == 0
        runs.append((data_bytes(out), summary(out, "msd")))
    assert runs[0] == runs[1] and runs[0][1]["built_records"] == 10


def test_ray_gives_the_in_process_bytes_with_tantivy_shards_opened_by_each_worker(ray_local, workspace):
    local = run(workspace / "tantivy-local", "--retriever", "tantivy", "--pool-shards", 2)
    assert local[1]["parameters"]["retriever"] == "tantivy" and local[1]["built_records"] >= 6
    assert run(workspace / "tantivy-ray", "--retriever", "tantivy", "--pool-shards", 2, "--engine", "ray", "--workers", 2,
               "--partition-size", 2) == local


def test_device_cuda_on_a_cluster_without_gpus_names_what_is_missing(ray_local, workspace, capsys):
    out = workspace / "out"
    assert cli.main(["corrupt", str(STORIES), "--recipe", "dsd", "--out", str(out), "--engine", "ray", "--device", "cuda",
                     "--keep-test-overlap"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("cohbench: error: --device cuda: the Ray cluster") and "has no GPU (it offers CPU 2" in err
    assert err.count("\n") == 1 and not out.exists()
