// Live curves: metrics.jsonl rows (from the metrics event stream) grouped into charts, drawn
// with the vendored uPlot; x is the learner step. A chart appears once a row has one of its
// metrics. A chart may put some series on a second axis at the right (a count beside
// fractions) or stack its series as areas (parts of a whole: the step's time). Each chart's
// element carries what a person sees, for the browser tests: data-points (rows drawn),
// data-keys (its series), data-filled (rows with a number for one of them), data-axes (each
// series' axis), data-ranges (each axis' drawn [min, max]), data-ticks (each value axis' tick
// labels as drawn) and, stacked, data-top (the height of the stack at the last step).
"use strict";

// The step's time as parts that add up to time/step: waiting for groups, the trainer's
// phases, the weights push; "time/other" is the rest (bookkeeping, evaluation, checkpoints).
const STEP_PARTS = ["time/wait_for_batch", "time/old_logprobs", "time/forward", "time/backward", "time/algo",
  "time/optimizer", "time/weights_serialise", "time/weights_push"];
const COUNTS = k => k === "eval/n";  // held-out prompts: a count, not a fraction
const CHART_GROUPS = [
  {title: "Reward", test: k => k === "reward" || (k.startsWith("reward/") && !/\/(min|max)$|_failed$/.test(k))},
  {title: "KL", test: k => k === "kl" || k === "approx_kl" || k === "mismatch_kl"},
  {title: "Entropy", test: k => k === "entropy"},
  {title: "Response length", test: k => (k.startsWith("completions/") && k.endsWith("_length")) || k === "eval/response_length_mean"},
  {title: "Truncation", test: k => k === "completions/clipped_ratio" || k === "rollout_correction/truncated_frac"},
  {title: "Clip fractions", test: k => k.startsWith("clip_ratio/")},
  {title: "Grad norm", test: k => k === "grad_norm"},
  {title: "Throughput", test: k => k.startsWith("perf/")},
  {title: "Staleness", test: k => k.startsWith("staleness/")},
  {title: "Step time split (s)", test: k => STEP_PARTS.includes(k), stacked: true},
  {title: "Stage time (s)", test: k => k.startsWith("time/") && k !== "time/step" && !STEP_PARTS.includes(k)},
  {title: "Held-out eval", test: k => k.startsWith("eval/") && k !== "eval/time_s" && k !== "eval/response_length_mean",
   right: COUNTS, rightLabel: "prompts"},
  {title: "Queues", test: k => k.startsWith("queue/")},
];
const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"];
const num = v => (typeof v === "number" ? v : null);

// The rest of the step: time/step less its measured parts (never below 0); null without time/step.
function otherTime(row) {
  if (typeof row["time/step"] !== "number") return null;
  return Math.max(0, row["time/step"] - STEP_PARTS.reduce((sum, k) => sum + (num(row[k]) || 0), 0));
}

// Each series' values summed with the ones below it (a missing value counts 0 in a row that
// has any part).
function stackUp(columns) {
  const sums = [];
  columns.forEach((column, i) => sums.push(column.map((v, j) => {
    const below = i ? sums[i - 1][j] : null;
    if (v === null && below === null) return null;
    return (below || 0) + (v || 0);
  })));
  return sums;
}

// The decimals `x` needs to be written exactly (0.25: 2; 5: 0), float noise aside.
function decimalsOf(x) {
  for (let d = 0; d < 10; d++) {
    const scaled = Math.abs(x) * 10 ** d;
    if (Math.abs(scaled - Math.round(scaled)) < 1e-6 * Math.max(1, scaled)) return d;
  }
  return 10;
}

// Tick labels that tell the ticks apart at any scale: the decimals the tick spacing needs
// (2.5 apart: 0.0, 2.5, 5.0), and an exponent for values below 1e-3 or from 1e6 (a KL of 1e-4
// read "0.00" at every tick with uPlot's default labels).
function tickLabels(splits, incr) {
  const big = Math.max(...splits.map(Math.abs));
  const step = incr > 0 ? incr : big || 1;
  if (big && (big < 1e-3 || big >= 1e6)) {
    const digits = decimalsOf(step / 10 ** Math.floor(Math.log10(big)));
    return splits.map(v => (v === 0 ? "0" : v.toExponential(digits)));
  }
  return splits.map(v => v.toFixed(decimalsOf(step)));
}

// A value axis' labels, also kept on the chart's element (the canvas holds no text to read).
function valueAxis(scale) {
  return {scale, values: (u, splits, axisIdx, space, incr) => {
    const labels = tickLabels(splits, incr);
    const box = u.root.parentNode;
    if (box) box.dataset.ticks = JSON.stringify({...JSON.parse(box.dataset.ticks || "{}"), [scale]: labels});
    return labels;
  }};
}

class Charts {
  constructor(container) { this.container = container; this.rows = []; this.charts = new Map(); this.pending = false; }

  add(row) { this.rows.push(row); if (!this.pending) { this.pending = true; requestAnimationFrame(() => this.draw()); } }

  keysOf(group) {
    const keys = new Set();
    for (const row of this.rows) for (const k in row) if (typeof row[k] === "number" && group.test(k)) keys.add(k);
    const sorted = [...keys].sort();
    if (!group.stacked) return sorted;
    const parts = STEP_PARTS.filter(k => keys.has(k));  // bottom first, in the step's order
    return parts.length && this.rows.some(r => otherTime(r) !== null) ? [...parts, "time/other"] : parts;
  }

  columns(keys) {
    return keys.map(k => this.rows.map(r => (k === "time/other" ? otherTime(r) : num(r[k]))));
  }

  draw() {
    this.pending = false;
    for (const group of CHART_GROUPS) {
      const keys = this.keysOf(group);
      if (!keys.length) continue;
      const raw = this.columns(keys);
      const data = [this.rows.map(r => r.step), ...(group.stacked ? stackUp(raw) : raw)];
      let chart = this.charts.get(group.title);
      if (!chart || chart.keys.join() !== keys.join()) chart = this.create(group, keys, data, chart);
      else chart.plot.setData(data);
      chart.raw = raw;
      this.describe(chart, group, keys, data);
    }
  }

  describe(chart, group, keys, data) {
    const box = chart.box;
    box.dataset.points = String(this.rows.length);
    box.dataset.keys = keys.join(" ");
    box.dataset.filled = String(this.rows.filter(r => keys.some(k => num(k === "time/other" ? otherTime(r) : r[k]) !== null)).length);
    box.dataset.axes = JSON.stringify(Object.fromEntries(keys.map(k => [k, group.right && group.right(k) ? "right" : "y"])));
    if (group.stacked) box.dataset.top = String(data[data.length - 1].at(-1));
  }

  // After each redraw: the range each axis was drawn with.
  static ranges(u) {
    u.root.parentNode.dataset.ranges = JSON.stringify(Object.fromEntries(Object.entries(u.scales)
      .filter(([name]) => name !== "x").map(([name, s]) => [name, [s.min, s.max]])));
  }

  // A new chart, in the place of `old` (the same chart with fewer series) when there is one.
  create(group, keys, data, old) {
    const box = el("div", {class: "chart", "data-title": group.title, "data-stacked": group.stacked ? "1" : "0"});
    if (old) { old.plot.destroy(); old.box.replaceWith(box); } else this.container.append(box);
    const chart = {box, keys, raw: []};
    const series = [{label: "step"}, ...keys.map((k, i) => this.series(group, chart, k, i))];
    const axes = [{}, valueAxis("y")];
    if (keys.some(k => group.right && group.right(k))) axes.push({...valueAxis("right"), side: 1, label: group.rightLabel, grid: {show: false}});
    const scales = {x: {time: false}};
    if (group.stacked) scales.y = {range: (u, min, max) => [0, max > 0 ? max * 1.05 : 1]};  // a stack stands on 0
    const opts = {title: group.title, width: 420, height: 220, series, axes, scales,
      legend: {live: true}, hooks: {draw: [Charts.ranges]}};
    if (group.stacked) opts.bands = keys.slice(1).map((k, i) => ({series: [i + 2, i + 1], fill: `${PALETTE[(i + 1) % PALETTE.length]}55`}));
    chart.plot = new uPlot(opts, data, box);
    this.charts.set(group.title, chart);
    return chart;
  }

  series(group, chart, key, i) {
    const color = PALETTE[i % PALETTE.length];
    // spanGaps: a metric logged every few steps (held-out eval) is still one line
    const s = {label: key, stroke: color, width: 1.5, scale: group.right && group.right(key) ? "right" : "y", spanGaps: true};
    if (!group.stacked) return s;
    // stacked: the legend shows the part itself, not the running sum it is drawn at
    s.value = (u, v, si, idx) => (idx === null || chart.raw[si - 1][idx] === null ? "-" : fmt(chart.raw[si - 1][idx]));
    if (i === 0) s.fill = `${color}55`;
    return s;
  }
}
