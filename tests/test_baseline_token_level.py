"""The token-level detector (all-MiniLM-L6-v2 fine-tuned over [SEP]-separated sentences): it learns to find an
off-topic sentence, scores every unit of a long text from exactly one window, judges a sentence on the text up
to it in prefix mode, and gives the same scores for the same seed."""

import dataclasses

import numpy as np
import pytest
import torch

from cohbench.baseline import Example
from cohbench.baseline.token_level import detector, fit, plan, predict, windows
from cohbench.evaluation.metrics import roc_auc

pytestmark = pytest.mark.slow  # each test loads, trains or runs the token-level detector

TOPICS = {
    "kitchen": [
        "Mia chopped the onions on the wooden board.",
        "She stirred the soup until it started to bubble.",
        "The bread in the oven smelled of warm butter.",
        "He added a pinch of salt to the boiling pasta.",
        "They set the table with plates and forks for dinner.",
        "The kettle whistled while she sliced the lemon.",
        "Grandma rolled out the dough for the apple pie.",
        "He washed the pans and dried them with a towel.",
    ],
    "football": [
        "The striker kicked the ball into the top corner.",
        "The referee blew the whistle for a penalty.",
        "Fans in the stadium cheered for the home team.",
        "The goalkeeper dived and saved the shot.",
        "The coach shouted tactics from the sideline.",
        "The defender headed the ball away from the goal.",
        "Both teams ran onto the muddy pitch before kickoff.",
        "The captain lifted the trophy after the final.",
    ],
    "space": [
        "The rocket roared as it left the launch pad.",
        "The astronauts floated inside the space station.",
        "A bright comet crossed the dark night sky.",
        "The probe sent back photos of the red planet.",
        "Mission control counted down to the launch.",
        "The telescope spotted a distant spiral galaxy.",
        "The capsule splashed down in the ocean after orbit.",
        "She watched the moon rise through the observatory dome.",
    ],
    "garden": [
        "Tom planted tomato seeds in the spring soil.",
        "The roses in the garden bloomed in bright red.",
        "She watered the herbs every morning before work.",
        "Bees buzzed around the lavender by the fence.",
        "He pulled the weeds from between the carrots.",
        "The apple tree in the yard was full of fruit.",
        "They raked the fallen leaves into a big pile.",
        "A snail crawled slowly across the lettuce bed.",
    ],
}

P = {"seed": 0, "epochs": 2, "batch_size": 8, "learning_rate": 2e-4, "weight_decay": 0.01,
     "max_tokens": 64, "max_sentence_tokens": 16, "warmup_ratio": 0.1}  # fmt: skip


def stories(count: int, split: str, seed: int) -> list[Example]:
    """Five sentences about the kitchen, football or the garden, one of them replaced by a sentence about space
    (label 1)."""
    rng = np.random.default_rng(seed)
    topics = ["football", "garden", "kitchen"]
    out = []
    for i in range(count):
        pool = TOPICS[topics[int(rng.integers(3))]]
        sentences = [pool[j] for j in rng.choice(len(pool), size=5, replace=False)]
        position = int(rng.integers(5))
        sentences[position] = TOPICS["space"][int(rng.integers(len(TOPICS["space"])))]
        labels = [int(k == position) for k in range(5)]
        out.append(Example("toy_dsd", f"{split}-{i}", split, "sentences", sentences, labels, [-1] * 4))
    return out


def long_text(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    words = [w.strip(".").lower() for sentences in TOPICS.values() for s in sentences for w in s.split()]
    return [" ".join(rng.choice(words, size=int(rng.integers(3, 20)))).capitalize() + "." for _ in range(n)]


@pytest.fixture(scope="module")
def untrained():
    torch.manual_seed(0)
    return detector(P["max_tokens"], P["max_sentence_tokens"])


def test_fine_tuning_teaches_the_detector_to_flag_the_off_topic_sentence(untrained):
    train, dev = stories(24, "train", 0), stories(10, "dev", 1)
    gold = np.concatenate([e.sentence_labels for e in dev])
    untrained_auc = roc_auc(gold, np.concatenate(predict(untrained, dev)))
    model, selection = fit(train, dev, P, progress=False)
    assert selection["dev_auc"] >= 0.9 and selection["dev_auc"] >= untrained_auc + 0.2, (untrained_auc, selection)
    assert selection["dev_auc_per_config"] == {"toy_dsd": selection["dev_auc"]}
    assert [h["epoch"] for h in selection["history"]] == [1, 2]
    assert roc_auc(gold, np.concatenate(predict(model, dev))) == pytest.approx(selection["dev_auc"], abs=1e-4)


def test_the_same_seed_gives_the_same_scores():
    train, dev = stories(4, "train", 2), stories(3, "dev", 3)
    p = P | {"epochs": 1}
    first, second = (predict(fit(train, [], p, progress=False)[0], dev) for _ in range(2))
    assert all(np.array_equal(a, b) for a, b in zip(first, second))
    other = predict(fit(train, [], p | {"seed": 1}, progress=False)[0], dev)
    assert not all(np.array_equal(a, b) for a, b in zip(first, other))


@pytest.mark.parametrize("task", ["sentences", "gaps"])
def test_every_unit_of_a_long_text_is_scored_from_exactly_one_window(task):
    lengths = np.random.default_rng(3).integers(1, 17, size=100).tolist()
    planned = plan(lengths, 64, task)
    assert len(planned) > 5
    units = sorted(u for _, _, us in planned for u in us)
    assert units == list(range(100 - (task == "gaps")))
    bounds = windows(lengths, 64)
    assert [(a, b) for a, b, _ in planned] == bounds
    assert all(1 + sum(lengths[a:b]) + (b - a) <= 64 for a, b in bounds)
    assert all(next_start < stop for (_, stop), (next_start, _) in zip(bounds, bounds[1:]))  # windows overlap
    for start, stop, us in planned:
        for u in us:
            first, last = u, u + (task == "gaps")
            assert start <= first and last < stop
            # the rule: no other window gives the unit more context on its poorer side
            best = max(min(first - a, b - 1 - last) for a, b in bounds if a <= first and last < b)
            assert min(first - start, stop - 1 - last) == best


@pytest.mark.parametrize("task", ["sentences", "gaps"])
def test_a_long_text_gets_one_score_per_unit_each_from_the_model_on_its_window(untrained, task):
    sentences = long_text(40, 4)
    example = Example("c", "long", "test", task, sentences, [0] * 40, [0] * 39)
    scores = predict(untrained, [example])[0]
    assert scores.shape == (40 - (task == "gaps"),) and np.all(np.isfinite(scores))
    tokens = untrained.tokenizer(sentences, add_special_tokens=False, truncation=True, max_length=P["max_sentence_tokens"])
    planned = [w for w in plan([len(t) for t in tokens["input_ids"]], P["max_tokens"], task) if w[2]]
    assert len(planned) > 4
    for start, stop, units in planned[2:4]:
        alone = predict(untrained, [dataclasses.replace(example, sentences=sentences[start:stop])])[0]  # one window
        np.testing.assert_allclose(scores[units], alone[np.array(units) - start], atol=1e-5)


def test_prefix_scores_ignore_later_sentences(untrained):
    text = long_text(10, 5)  # longer than one window: the first prefixes fit whole, the last ones are cut
    one = Example("c", "a", "test", "sentences", text, [0] * 10, [-1] * 9)
    other = dataclasses.replace(one, sentences=text[:6] + long_text(4, 6))
    judged_on_prefixes = [predict(untrained, [e], prefix=True)[0][:6] for e in (one, other)]
    np.testing.assert_allclose(*judged_on_prefixes, atol=1e-5)
    assert not np.allclose(predict(untrained, [one])[0][:6], predict(untrained, [other])[0][:6], atol=1e-4)
