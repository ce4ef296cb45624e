// One group's trace as a waterfall across the services: a row per span (indented by its
// depth), a bar placed on the trace's time axis, then the learner's step spans that link to it;
// the opened sample's own episode (its own trace) is marked.
"use strict";

function spanLabel(s) {
  if (!s.replica) return s.service || "?";
  return s.replica.startsWith(`${s.service}-`) ? s.replica : `${s.service}-${s.replica}`;
}

function durationText(ns) {
  const ms = ns / 1e6;
  return ms < 1 ? `${Math.round(ns / 1e3)}µs` : ms < 1000 ? `${ms.toFixed(1)}ms` : `${(ms / 1000).toFixed(2)}s`;
}

// The traces of one episode (an agent's episode is its own trace, its root span tagged with
// the episode id "group/sample index"): the sample's own rows are marked in its group's view.
function episodeTraces(spans, episodeId) {
  return new Set(spans.filter(s => (s.attributes || {})["meshrl.episode_id"] === episodeId).map(s => s.trace_id));
}

function renderWaterfall(target, spans, linked, episodeId) {
  const all = [...spans, ...linked];
  const mine = episodeTraces(spans, episodeId);
  const t0 = Math.min(...all.map(s => s.start_unix_ns));
  const total = Math.max(...all.map(s => s.end_unix_ns)) - t0 || 1;
  const row = (s, extra) => el("div", {class: `span-row ${extra}${mine.has(s.trace_id) ? " this-episode" : ""}`,
    "data-span": s.name, title: mine.has(s.trace_id) ? "this sample's episode" : ""},
    el("span", {class: "span-offset"}, `+${durationText(s.start_unix_ns - t0)}`),
    el("span", {class: "span-duration"}, durationText(s.end_unix_ns - s.start_unix_ns)),
    el("span", {class: "span-service"}, spanLabel(s)),
    el("span", {class: "span-name", style: `padding-left:${(s.depth || 0) * 12}px`}, s.name),
    el("span", {class: "span-track"}, el("span", {class: "span-bar",
      style: `left:${(s.start_unix_ns - t0) / total * 100}%;width:${Math.max(0.5, (s.end_unix_ns - s.start_unix_ns) / total * 100)}%`})));
  const marked = mine.size ? ` · this sample's episode ${episodeId} marked` : "";
  target.replaceChildren(el("div", {class: "trace-head"}, `${spans.length} spans · ${durationText(total)}${marked}`),
    ...spans.map(s => row(s, "")), ...(linked.length ? [el("div", {class: "trace-head"}, "linked from")] : []),
    ...linked.map(s => row(s, "linked")));
}
