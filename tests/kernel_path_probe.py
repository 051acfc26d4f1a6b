"""Run in a subprocess by test_reproducible_numerics.py under a given CPU code path (MKL_CBWR, ATEN_CPU_CAPABILITY
and the thread count are set before torch starts): prints, as JSON, what that path makes of the TimeTravel fixture
(its discordant records, every pair's BERTScore, every sentence's vector)."""

import hashlib
import json
import sys
from pathlib import Path

import torch

torch.set_num_threads(int(sys.argv[1]))

from cohbench.corpora import timetravel  # noqa: E402
from cohbench.corruptions.bertscore import TokenEmbeddings  # noqa: E402
from cohbench.encoder import CPU, encode, encoder_path  # noqa: E402
from cohbench.schema import FLOAT_DECIMALS  # noqa: E402

FIX = Path(__file__).parent / "fixtures" / "timetravel"
PATHS = {"timetravel_test": FIX / "test_data.json", "timetravel_dev": FIX / "dev_data.json"}
opts = timetravel.TimeTravelOptions(seed=13, tau=0.5, retriever="bm25s", top_k=100, k=1, dev_stories=1, max_stories_per_split=None)
records = timetravel.parse(PATHS, "timetravel_dsd", opts).records
sentences = sorted({s for story in timetravel.load_stories(PATHS)[0] for s in story["sentences"]})

# float32, as the encoder ran before: the raw bits of its output follow the kernels
from transformers import AutoModel, AutoTokenizer  # noqa: E402

tokenizer, model = AutoTokenizer.from_pretrained(encoder_path()), AutoModel.from_pretrained(encoder_path()).eval()
with torch.inference_mode():
    batch = tokenizer(sentences, padding=True, return_tensors="pt")
    float32 = model(**batch)[0].numpy().tobytes()

vectors = b"".join(vector.tobytes() for _, vector, _ in encode(sentences, device=CPU, tokens=False))
embeddings = TokenEmbeddings(device=CPU)
raw = [f1 for i, a in enumerate(sentences) for f1 in embeddings.f1(a, sentences[i + 1 :])]
scores = [round(f1, FLOAT_DECIMALS) for f1 in raw]
margin = [round(f1, FLOAT_DECIMALS + 2) for f1 in raw]  # 100 times finer than what a release records
print(json.dumps({
    "capability": torch.backends.cpu.get_cpu_capability(),
    "records": hashlib.sha256(json.dumps(records, sort_keys=True).encode()).hexdigest(),
    "similarities": [s for r in records for s in r["corruption"]["similarities"]],
    "pairs": len(scores),
    "scores": hashlib.sha256(json.dumps(scores).encode()).hexdigest(),
    "scores_finer": hashlib.sha256(json.dumps(margin).encode()).hexdigest(),
    "float32_encoder": hashlib.sha256(float32).hexdigest(),
    "vectors": hashlib.sha256(vectors).hexdigest(),
}))
