"""`cohbench corrupt --engine ray` on a local 2-CPU instance: the same bytes as in one process, whatever the
number of workers, the partitioning, the device asked for, or a confounder pool sharded through the object store;
texts split by Ray actors as in one process. Where each stage's actors go on a cluster with GPUs (`placement`, a
pure function of what the cluster offers) and how records are cut into blocks for them are checked directly: no
GPU is at hand here."""

from __future__ import annotations

import pytest

from cohbench import cli
from cohbench.corruptions import recipes
from cohbench.corruptions.ray_engine import Pool, balanced_blocks, most_gpu_actors, placement
from cohbench.encoder import CPU, Device
from cohbench.errors import CorruptionError

from test_corrupt_command import STORIES, data_bytes, summary

CUDA = Device("cuda")


def run(out, *args) -> tuple[dict, dict]:
    assert cli.main(["corrupt", str(STORIES), "--recipe", "dsd", "--out", str(out), "--splits", "train=0.7,test=0.3",
                     "--k", "2", "--json", "--keep-test-overlap", *map(str, args)]) == 0
    return data_bytes(out), summary(out, "dsd")


@pytest.mark.slow
def test_ray_gives_the_in_process_bytes_whatever_workers_partitions_and_pool_shards(ray_local, workspace):
    in_process = run(workspace / "local", "--partition-size", 3)
    assert in_process[1]["built_records"] >= 6 and in_process[1]["parameters"]["k"] == 2
    assert run(workspace / "ray2", "--engine", "ray", "--workers", 2, "--partition-size", 2) == in_process
    assert run(workspace / "ray1", "--engine", "ray", "--workers", 1, "--partition-size", 5, "--device", "cpu") == in_process

    sharded_local = run(workspace / "sharded-local", "--pool-shards", 3)
    sharded_ray = run(workspace / "sharded-ray", "--pool-shards", 3, "--engine", "ray", "--workers", 2, "--partition-size", 2)
    assert sharded_ray == sharded_local
    assert sharded_local[0] == in_process[0]  # per-shard top-k merged = the whole index's top-k on this pool


@pytest.mark.slow
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


@pytest.mark.slow
def test_ray_gives_the_in_process_bytes_with_tantivy_shards_opened_by_each_worker(ray_local, workspace):
    local = run(workspace / "tantivy-local", "--retriever", "tantivy", "--pool-shards", 2)
    assert local[1]["parameters"]["retriever"] == "tantivy" and local[1]["built_records"] >= 6
    assert run(workspace / "tantivy-ray", "--retriever", "tantivy", "--pool-shards", 2, "--engine", "ray", "--workers", 2,
               "--partition-size", 2) == local


@pytest.mark.slow
def test_device_cuda_on_a_cluster_without_gpus_names_what_is_missing(ray_local, workspace, capsys):
    out = workspace / "out"
    assert cli.main(["corrupt", str(STORIES), "--recipe", "dsd", "--out", str(out), "--engine", "ray", "--device", "cuda",
                     "--keep-test-overlap"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("cohbench: error: --device cuda: the Ray cluster") and "has no GPU (it offers CPU 2" in err
    assert err.count("\n") == 1 and not out.exists()


def places(recipe="dsd", device="auto", cpus=16, gpus=1, workers=None, **params):
    return placement(recipes.resolve(recipe, params), Device.requested(device), cpus, gpus, workers, "HOST:6379")


def test_device_stages_go_to_gpu_actors_that_share_a_gpu_and_the_rest_to_cpu_actors():
    gpu_pool = Pool(plan=True, make=True, device=CUDA, actors=4, gpus=0.25)
    assert places() == places(device="cuda") == (gpu_pool,)  # bm25s scores on the device: plan beside make
    assert gpu_pool.resources() == {"num_cpus": 1, "num_gpus": 0.25}
    assert places(gpus=2, recipe="synthetic") == (Pool(True, True, CUDA, 8, 0.25),)
    assert places(cpus=2) == (Pool(True, True, CUDA, 2, 0.25),)  # one CPU per actor
    assert places(workers=3) == (Pool(True, True, CUDA, 3, 0.25),)
    # more actors than the default share places split the GPUs evenly, never more than one GPU's worth on a GPU
    assert places(workers=15) == (Pool(True, True, CUDA, 15, 0.0666),)
    assert places(gpus=2, workers=15) == (Pool(True, True, CUDA, 15, 0.125),)  # 8 and 7 to a GPU
    assert places(gpus=3, workers=16) == (Pool(True, True, CUDA, 16, 0.1666),)
    assert places(gpus=0.5, workers=3) == (Pool(True, True, CUDA, 3, 0.1666),)
    # a retriever that scores on the CPU keeps its own pool of CPU actors, on the CPUs the GPU actors leave
    assert places(retriever="tantivy") == (Pool(True, False, CPU, 12), Pool(False, True, CUDA, 4, 0.25))
    assert places(retriever="rank_bm25", cpus=2, recipe="synthetic") == (Pool(True, False, CPU, 1), Pool(False, True, CUDA, 1, 0.25))
    assert places(retriever="tantivy", workers=2) == (Pool(True, False, CPU, 2), Pool(False, True, CUDA, 2, 0.25))
    # the CPU: asked for, no GPU, a recipe that uses no device, or less than one actor's share of a GPU
    cpu_pool = (Pool(True, True, CPU, 16),)
    assert places(device="cpu", gpus=8) == places(gpus=0) == places(recipe="msd") == places(gpus=0.2) == cpu_pool
    assert places(device="cpu", gpus=8, workers=3) == (Pool(True, True, CPU, 3),)
    assert cpu_pool[0].resources() == {"num_cpus": 1}


def test_the_most_workers_a_refusal_names_are_placed_and_one_more_is_refused():
    for gpus in (0.25, 0.5, 1, 1.5, 2, 3):
        most = most_gpu_actors(gpus)
        assert places(device="cuda", gpus=gpus, cpus=64, workers=most)[0].actors == most
        with pytest.raises(CorruptionError, match=f"use --workers {most} or fewer"):
            places(device="cuda", gpus=gpus, cpus=64, workers=most + 1)


@pytest.mark.parametrize(("gpus", "workers", "missing"), [
    (0, None, "--device cuda: the Ray cluster at HOST:6379 has no GPU (it offers CPU 16); add GPU nodes, or use "
              "--device cpu or auto"),
    (0.1, None, "--device cuda: the Ray cluster at HOST:6379 has 0.1 GPU, less than one actor's 0.25 (it offers CPU 16)"),
    (1, 17, "--workers 17: 17 GPU actors on the Ray cluster at HOST:6379 (1 GPU) would get less than 0.0625 of a GPU "
            "each; use --workers 16 or fewer, add GPU nodes, or use --device cpu"),
    (1.5, 17, "--workers 17: 17 GPU actors on the Ray cluster at HOST:6379 (1.5 GPU) would get less than 0.0625 of a "
              "GPU each; use --workers 16 or fewer"),  # an actor never spans two GPUs: the half GPU holds none
    (0.5, 9, "--workers 9: 9 GPU actors on the Ray cluster at HOST:6379 (0.5 GPU) would get less than 0.0625 of a "
             "GPU each; use --workers 8 or fewer"),
])
def test_a_cluster_without_the_gpus_the_actors_need_is_refused_naming_what_is_missing(gpus, workers, missing):
    with pytest.raises(CorruptionError) as refused:
        places(device="cuda", gpus=gpus, workers=workers)
    assert str(refused.value).startswith(missing) and "\n" not in str(refused.value)
    if workers:  # asked for on GPUs by auto too; with --device cpu the same workers are CPU actors
        with pytest.raises(CorruptionError, match="would get less than 0.0625 of a GPU each"):
            places(gpus=gpus, workers=workers)
        assert places(device="cpu", cpus=32, gpus=gpus, workers=workers) == (Pool(True, True, CPU, workers),)


@pytest.mark.parametrize(("asked", "missing"), [
    (dict(device="cpu", workers=20), "--workers 20: 20 Ray actors of one CPU each (every stage) need 20 CPUs, and the "
                                     "Ray cluster at HOST:6379 has 16; use --workers 16 or fewer, or add nodes"),
    (dict(retriever="tantivy", gpus=4, workers=9), "--workers 9: 18 Ray actors of one CPU each (BM25 candidates and GPU stages) "
                                           "need 18 CPUs, and the Ray cluster at HOST:6379 has 16; use --workers 8 or fewer"),
    (dict(retriever="tantivy", cpus=1), "2 Ray actors of one CPU each (BM25 candidates and GPU stages) need 2 CPUs, and "
                                        "the Ray cluster at HOST:6379 has 1; add nodes with more CPUs"),
    (dict(cpus=0.5, gpus=0), "1 Ray actors of one CPU each (every stage) need 1 CPUs, and the Ray cluster at HOST:6379 has 0.5"),
])
def test_actors_beyond_the_clusters_cpus_are_refused_instead_of_left_waiting(asked, missing):
    # Ray would leave the actors beyond its CPUs pending: a stage whose pool never starts stalls the whole run
    with pytest.raises(CorruptionError) as refused:
        places(**asked)
    assert str(refused.value).startswith(missing) and "\n" not in str(refused.value)


def test_records_are_cut_into_whole_waves_of_blocks_no_larger_than_a_partition():
    # 25 partitions of 2,000 on 15 actors went in two waves, the second leaving 5 actors idle: now 30 blocks
    assert balanced_blocks(50_000, 15, 2000) == [1667] * 20 + [1666] * 10
    assert balanced_blocks(5000, 15, 2000) == [334] * 5 + [333] * 10  # was 3 partitions: 12 actors idle
    assert balanced_blocks(3, 15, 2000) == [1, 1, 1]  # fewer records than actors: one each
    assert balanced_blocks(0, 4, 10) == []
    for records, actors, most in [(1, 4, 2000), (7, 3, 2), (13, 2, 5), (50_000, 16, 2000), (500_000, 4, 2000), (99, 7, 1)]:
        sizes = balanced_blocks(records, actors, most)
        assert sum(sizes) == records and max(sizes) <= most and max(sizes) - min(sizes) <= 1
        assert (len(sizes) % actors == 0 or sizes == [1] * records) and sizes == sorted(sizes, reverse=True)
