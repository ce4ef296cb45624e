// Live curves: metrics.jsonl rows (from the metrics event stream) grouped into charts, drawn
// with the vendored uPlot; x is the learner step. A chart appears once a row has one of its
// metrics; each chart's element carries data-points (rows drawn), data-keys (its series) and
// data-filled (rows with a number for one of them), read by the browser tests.
"use strict";

const CHART_GROUPS = [
  ["Reward", k => k === "reward" || (k.startsWith("reward/") && !/\/(min|max)$|_failed$/.test(k))],
  ["KL", k => k === "kl" || k === "approx_kl" || k === "mismatch_kl"],
  ["Entropy", k => k === "entropy"],
  ["Response length", k => k.startsWith("completions/") && k.endsWith("_length")],
  ["Truncation", k => k === "completions/clipped_ratio" || k === "rollout_correction/truncated_frac"],
  ["Clip fractions", k => k.startsWith("clip_ratio/")],
  ["Grad norm", k => k === "grad_norm"],
  ["Throughput", k => k.startsWith("perf/")],
  ["Staleness", k => k.startsWith("staleness/")],
  ["Step time split (s)", k => k.startsWith("time/") && k !== "time/step"],
  ["Held-out eval", k => k.startsWith("eval/")],
  ["Queues", k => k.startsWith("queue/")],
];
const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"];

class Charts {
  constructor(container) { this.container = container; this.rows = []; this.charts = new Map(); this.pending = false; }

  add(row) { this.rows.push(row); if (!this.pending) { this.pending = true; requestAnimationFrame(() => this.draw()); } }

  keysOf(test) {
    const keys = new Set();
    for (const row of this.rows) for (const k in row) if (typeof row[k] === "number" && test(k)) keys.add(k);
    return [...keys].sort();
  }

  draw() {
    this.pending = false;
    for (const [title, test] of CHART_GROUPS) {
      const keys = this.keysOf(test);
      if (!keys.length) continue;
      const data = [this.rows.map(r => r.step), ...keys.map(k => this.rows.map(r => (typeof r[k] === "number" ? r[k] : null)))];
      let chart = this.charts.get(title);
      if (chart && chart.keys.join() !== keys.join()) { chart.plot.destroy(); chart.box.remove(); chart = null; }
      if (!chart) chart = this.create(title, keys, data); else chart.plot.setData(data);
      chart.box.dataset.points = String(this.rows.length);
      chart.box.dataset.keys = keys.join(" ");
      chart.box.dataset.filled = String(this.rows.filter(r => keys.some(k => typeof r[k] === "number")).length);
    }
  }

  create(title, keys, data) {
    const box = el("div", {class: "chart", "data-title": title});
    this.container.append(box);
    const series = [{label: "step"}, ...keys.map((k, i) => ({label: k, stroke: PALETTE[i % PALETTE.length], width: 1.5}))];
    const plot = new uPlot({title, width: 420, height: 220, series, scales: {x: {time: false}}, legend: {live: true}}, data, box);
    const chart = {box, plot, keys};
    this.charts.set(title, chart);
    return chart;
  }
}
