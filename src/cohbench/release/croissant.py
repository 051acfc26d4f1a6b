"""croissant.json: the release described in Croissant 1.0 (MLCommons), generated from the registry and the stats
the builds wrote. One record set per config (its scalar fields and sentences, read from its Parquet files), every
Parquet file with its sha256, licences, BibTeX, and the responsible-AI fields that are known: where every record
comes from (the pinned upstream files), who annotated it and how many per item, and human versus synthetic labels.
"""

from __future__ import annotations


from .card import cohbench_citation, licence_of
from .layout import annotation_of
from ..corpora.registry import corpora

# The standard Croissant 1.0 @context (as mlcroissant writes it).
CONTEXT = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}

# The schema fields a record set exposes, with their Croissant types: the scalars and the sentences. The nested
# lists (spans, ratings, corruption) are read with `cohbench.load` or `cohbench sql`.
FIELDS = {
    "id": "sc:Text", "corpus": "sc:Text", "config": "sc:Text", "split": "sc:Text", "doc_id": "sc:Text",
    "system": "sc:Text", "system_name": "sc:Text", "difficulty": "sc:Text", "label": "sc:Integer",
}  # fmt: skip
_DESCRIPTIONS = {
    "id": "Stable record id derived from upstream keys.",
    "doc_id": "Leakage unit (source document or story); never in two splits.",
    "system": "Generating system or model.",
    "label": "Whole text: 1 = has an error, 0 = ok, -1 = no label.",
}


def _record_set(name: str, stats: dict, version: dict) -> dict:
    files = f"{name}/parquet-files"
    fields = []
    for field, data_type in FIELDS.items():
        entry = {"@type": "cr:Field", "@id": f"{name}/{field}", "name": field, "dataType": data_type,
                 "source": {"fileSet": {"@id": files}, "extract": {"column": field}}}  # fmt: skip
        if field in _DESCRIPTIONS:
            entry["description"] = _DESCRIPTIONS[field]
        fields.append(entry)
    return {
        "@type": "cr:RecordSet",
        "@id": name,
        "name": name,
        "description": f"{name} {version['version']} (records fingerprint {version['fingerprint']}): "
        + ", ".join(f"{split} {f['rows']}" for split, f in stats["files"].items()) + " records.",
        "field": fields,
    }


def _distribution(name: str, stats: dict) -> list[dict]:
    out = [
        {"@type": "cr:FileObject", "@id": f["path"], "name": f["path"], "contentUrl": f["path"], "contentSize": f"{f['bytes']} B",
         "encodingFormat": "application/x-parquet", "sha256": f["sha256"]}
        for f in stats["files"].values()
    ]  # fmt: skip
    out.append({"@type": "cr:FileSet", "@id": f"{name}/parquet-files", "name": f"{name} Parquet files",
                "encodingFormat": "application/x-parquet", "includes": f"data/{name}/*.parquet"})  # fmt: skip
    return out


def croissant(configs: dict[str, dict], data: dict) -> dict:
    """The Croissant JSON-LD of the configs built in a release; `data` is their provenance (`versions.provenance`)."""
    known = corpora()
    licences, provenance, annotators, kinds = [], [], [], []
    for name, stats in configs.items():
        licence = licence_of(stats)
        licences.append(licence["link"] or licence["text"])
        pinned = [i for i in stats["inputs"] if "url" in i]  # a `corrupt` output's inputs are the user's files, with no URL
        provenance.append(f"{name} {data['configs'][name]['version']}: built by cohbench {data['release']} from {len(pinned)} upstream file(s) pinned by URL "
                          "and sha256 (isBasedOn; each with its checksum in manifest.json)" if len(pinned) == len(stats["inputs"]) else
                          f"{name} {data['configs'][name]['version']}: made by `cohbench corrupt` from {len(stats['inputs'])} input file(s) of its "
                          "user's, each named with its sha256 in manifest.json")
        total, altered = sum(f["rows"] for f in stats["files"].values()), stats["records_altered"]
        kinds.append(f"{name}: synthetic labels, made by a corruption generator ({altered} of {total} records altered; the rest "
                     "are the unaltered texts, labelled by the same recipe)" if annotation_of(stats) == "synthetic"
                     else f"{name}: human labels ({total} records)")
        corpus = known.get(stats["corpus"])
        who = corpus.annotators if corpus and corpus.annotators else "no human annotators: labels come from the corruption generator"
        annotators.append(f"{name}: {who}")
    citations = [cohbench_citation(data["release"])] + [known[c].bibtex.strip() for c in dict.fromkeys(s["corpus"] for s in configs.values()) if c in known]
    return {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "name": "cohbench",
        "conformsTo": "http://mlcommons.org/croissant/1.0",
        "description": "Corpora for evaluating the coherence and faithfulness of narrative summaries, in one schema: "
        "human annotations (SNaC, StorySumm, SummEval) and synthetic incoherence (TimeTravel, FairytaleQA, Story Cloze). "
        "Labels: 1 = has an error.",
        "version": data["release"],
        "license": list(dict.fromkeys(licences)),
        "citeAs": "\n\n".join(citations),
        "isBasedOn": sorted({i["url"] for s in configs.values() for i in s["inputs"] if "url" in i}),
        "rai:dataCollection": "\n".join(provenance),
        "rai:dataCollectionType": "\n".join(kinds),
        "rai:annotationsPerItem": "\n".join(annotators),
        "rai:dataAnnotationProtocol": "See each corpus's section of README.md and its whole card, cards/<corpus>.md; "
        "synthetic labels are made by the corruption generator recorded in each record's `corruption` field.",
        "distribution": [entry for name, stats in configs.items() for entry in _distribution(name, stats)],
        "recordSet": [_record_set(name, stats, data["configs"][name]) for name, stats in configs.items()],
    }
