// A config's records, browsable and filterable: written by `cohbench show` (cohbench/viewer/site.py). Text is
// inserted with textContent only, so no record can inject markup.
(function () {
  "use strict";
  const records = window.COHBENCH_RECORDS || [];
  const PAGE = 50;
  const byId = new Map(records.map((r) => [r.id, r]));
  const state = { split: "", label: "", type: "", system: "", votes: "", id: "", page: 0 };

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value !== undefined && value !== null) node.setAttribute(key, String(value));
    }
    for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    return node;
  }

  function distinct(values) {
    return [...new Set(values.filter((v) => v !== undefined && v !== null && v !== ""))].sort();
  }

  function select(name, label, options) {
    const box = el("select", { name: name, id: "filter-" + name });
    box.append(el("option", { value: "" }, "any"));
    for (const option of options) box.append(el("option", { value: option }, option));
    box.addEventListener("change", () => { state[name] = box.value; state.page = 0; render(); });
    return el("label", {}, label + " ", box);
  }

  function buildFilters() {
    const form = document.getElementById("filters");
    const spans = records.flatMap((r) => r.spans || []);
    form.append(
      select("split", "split", distinct(records.map((r) => r.split))),
      select("label", "label", distinct(records.map((r) => r.label || "unlabelled"))),
      select("type", "error type", distinct(spans.map((s) => s.type))),
      select("system", "system", distinct(records.map((r) => r.system))),
      select("votes", "votes at least", distinct(spans.map((s) => s.votes)).map(Number).sort((a, b) => a - b).map(String)),
    );
    const search = el("input", { type: "search", id: "filter-id", placeholder: "id contains" });
    search.addEventListener("input", () => { state.id = search.value; state.page = 0; render(); });
    form.append(el("label", {}, "id ", search));
    form.addEventListener("submit", (event) => event.preventDefault());
  }

  function matches(r) {
    const spans = r.spans || [];
    return (!state.split || r.split === state.split)
      && (!state.label || (r.label || "unlabelled") === state.label)
      && (!state.type || spans.some((s) => s.type === state.type))
      && (!state.system || r.system === state.system)
      && (!state.votes || spans.some((s) => s.votes >= Number(state.votes) && (!state.type || s.type === state.type)))
      && (!state.id || r.id.includes(state.id));
  }

  function spanMark(spanList, text) {
    const first = spanList[0];
    const who = spanList.map((s) => `${s.type}: ${s.votes} vote(s)` + (s.annotator ? `, annotator ${s.annotator}` : "")
      + ((s.antecedents || []).length ? `, antecedents: ${s.antecedents.join(" | ")}` : "")).join("; ");
    return el("mark", { class: "span type-" + first.type, "data-type": first.type, "data-votes": first.votes, title: who },
      text, el("sup", { class: "tag" }, spanList.map((s) => `${s.type}×${s.votes}`).join(" ")));
  }

  // One segment's text with its resolved spans highlighted; overlapping spans share the characters they cover.
  function segmentText(text, spans) {
    const cuts = new Set([0, text.length]);
    for (const s of spans) { cuts.add(s.start); cuts.add(s.end); }
    const points = [...cuts].filter((c) => c >= 0 && c <= text.length).sort((a, b) => a - b);
    const out = el("p", { class: "segment" });
    for (let i = 0; i + 1 < points.length; i++) {
      const [a, b] = [points[i], points[i + 1]];
      const covering = spans.filter((s) => s.start <= a && b <= s.end);
      out.append(covering.length ? spanMark(covering, text.slice(a, b)) : document.createTextNode(text.slice(a, b)));
    }
    return out;
  }

  // The source's sentence a corruption took away at `position` (replaced, or removed from that gap): the record
  // carries it (`corruption.replaced`), since its source is rarely in the same config.
  function lostSentence(r, position) {
    const c = r.corruption;
    return c && c.replaced ? c.replaced[c.positions.indexOf(position)] : undefined;
  }

  function corruptionNote(r, position) {
    const c = r.corruption;
    const at = c.positions.indexOf(position);
    const parts = [`${c.generator} at position ${position}`];
    if (c.similarities && c.similarities[at] !== undefined) parts.push(`similarity ${Number(c.similarities[at]).toFixed(3)}`);
    if (c.ranks && c.ranks[at] !== undefined) parts.push(`rank ${c.ranks[at]}`);
    if (c.inserted_ids && c.inserted_ids[at]) parts.push(`inserted from ${c.inserted_ids[at]}`);
    return parts.join("; ");
  }

  // What a corruption changed at `position`, beside the change: its provenance and the sentence it took away.
  function changeNote(r, position, what) {
    const lost = lostSentence(r, position);
    const note = el("small", { class: "note" }, "[" + corruptionNote(r, position) + "]");
    if (lost !== undefined) note.append(` ${what}: `, el("del", { class: "replaced" }, lost));
    note.append(" ");
    return note;
  }

  function sentencesText(r) {
    const out = el("p", { class: "sentences" });
    const explained = new Map((r.explanations || []).filter((e) => e.sentence !== undefined).map((e) => [e.sentence, e.text]));
    const positions = (r.corruption && r.corruption.positions) || [];
    const gaps = r.gap_labels || [];
    (r.sentences || []).forEach((sentence, i) => {
      const classes = ["sentence"];
      if ((r.sentence_labels || [])[i] === 1) classes.push("error");
      if (explained.has(i)) classes.push("explained");
      const corrupted = positions.includes(i) && !gaps.length;
      const node = corrupted
        ? el("mark", { class: classes.concat("corruption").join(" "), "data-position": i, title: corruptionNote(r, i) }, sentence)
        : el("span", { class: classes.join(" "), title: explained.get(i) }, sentence);
      out.append(node, " ");
      if (corrupted) out.append(changeNote(r, i, "replaced"));
      if (gaps[i] === "missing") {
        out.append(el("mark", { class: "gap", "data-position": i, title: "a sentence is missing here" }, "⟂ missing sentence"), " ");
        if (r.corruption) out.append(changeNote(r, i, "removed"));
      }
    });
    return out;
  }

  function recordCard(r) {
    const card = el("article", { class: "record", id: "record-" + r.id, "data-id": r.id });
    const head = [r.id, r.split, r.system ? `system ${r.system}` : null, r.difficulty ? `difficulty ${r.difficulty}` : null].filter(Boolean);
    card.append(el("h3", {}, head.join(" · ") + " ", el("span", { class: "label label-" + (r.label || "unlabelled") }, r.label || "unlabelled")));
    const spans = r.spans || [];
    if (r.segments && r.segments.length) {
      r.segments.forEach((segment, index) => {
        card.append(segmentText(segment, spans.filter((s) => s.resolved && s.segment === index && s.start !== undefined)));
      });
      const unresolved = spans.filter((s) => !s.resolved);
      if (unresolved.length) {
        card.append(el("p", { class: "unresolved" }, "not located in the text: "
          + unresolved.map((s) => `“${s.text}” (${s.type}, ${s.votes} vote(s))`).join("; ")));
      }
    } else {
      card.append(sentencesText(r));
    }
    if ((r.explanations || []).length) {
      const list = el("ul", { class: "explanations" });
      for (const e of r.explanations) list.append(el("li", {}, (e.sentence !== undefined ? `sentence ${e.sentence}: ` : "") + e.text));
      card.append(el("h4", {}, "explanations"), list);
    }
    if ((r.ratings || []).length) {
      const means = {};
      for (const g of r.ratings) (means[g.dimension] = means[g.dimension] || []).push(g.score);
      card.append(el("p", { class: "ratings" }, Object.entries(means)
        .map(([d, s]) => `${d} ${(s.reduce((a, b) => a + b, 0) / s.length).toFixed(2)} (${s.length} ratings)`).join("; ")));
    }
    return card;
  }

  function render() {
    const chosen = records.filter(matches);
    const pages = Math.max(1, Math.ceil(chosen.length / PAGE));
    state.page = Math.min(state.page, pages - 1);
    document.getElementById("count").textContent = `${chosen.length} of ${records.length} records`;
    const main = document.getElementById("records");
    main.replaceChildren(...chosen.slice(state.page * PAGE, (state.page + 1) * PAGE).map(recordCard));
    const nav = document.getElementById("pages");
    nav.replaceChildren();
    for (let p = 0; p < pages && pages > 1; p++) {
      const button = el("button", { type: "button", class: p === state.page ? "current" : "" }, String(p + 1));
      button.addEventListener("click", () => { state.page = p; render(); window.scrollTo(0, 0); });
      nav.append(button);
    }
  }

  // CONFIG.html#ID shows that record, on opening and whenever the hash changes in an open page
  function followHash() {
    let wanted = "";
    try {
      wanted = decodeURIComponent(location.hash.slice(1));
    } catch (error) {  // a malformed hash (a lone %) selects nothing rather than blanking the page
      return;
    }
    if (wanted && byId.has(wanted)) {
      state.id = wanted;
      state.page = 0;
      document.getElementById("filter-id").value = wanted;
    }
  }

  buildFilters();
  followHash();
  window.addEventListener("hashchange", () => { followHash(); render(); });
  render();
})();
