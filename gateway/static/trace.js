// One group's trace as a waterfall across the services: a row per span (indented by its
// depth), a bar placed on the trace's time axis, then the learner's step spans that link to it.
"use strict";

function spanLabel(s) {
  if (!s.replica) return s.service || "?";
  return s.replica.startsWith(`${s.service}-`) ? s.replica : `${s.service}-${s.replica}`;
}

function durationText(ns) {
  const ms = ns / 1e6;
  return ms < 1 ? `${Math.round(ns / 1e3)}µs` : ms < 1000 ? `${ms.toFixed(1)}ms` : `${(ms / 1000).toFixed(2)}s`;
}

function renderWaterfall(target, spans, linked) {
  const all = [...spans, ...linked];
  const t0 = Math.min(...all.map(s => s.start_unix_ns));
  const total = Math.max(...all.map(s => s.end_unix_ns)) - t0 || 1;
  const row = (s, extra) => el("div", {class: `span-row ${extra}`, "data-span": s.name},
    el("span", {class: "span-offset"}, `+${durationText(s.start_unix_ns - t0)}`),
    el("span", {class: "span-duration"}, durationText(s.end_unix_ns - s.start_unix_ns)),
    el("span", {class: "span-service"}, spanLabel(s)),
    el("span", {class: "span-name", style: `padding-left:${(s.depth || 0) * 12}px`}, s.name),
    el("span", {class: "span-track"}, el("span", {class: "span-bar",
      style: `left:${(s.start_unix_ns - t0) / total * 100}%;width:${Math.max(0.5, (s.end_unix_ns - s.start_unix_ns) / total * 100)}%`})));
  target.replaceChildren(el("div", {class: "trace-head"}, `${spans.length} spans · ${durationText(total)}`),
    ...spans.map(s => row(s, "")), ...(linked.length ? [el("div", {class: "trace-head"}, "linked from")] : []),
    ...linked.map(s => row(s, "linked")));
}
