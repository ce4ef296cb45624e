// The run page: live curves and alerts over server-sent events, the service map polled every
// 2 s, the samples browser and, from a sample, its episode (an agent's turns) and its group's
// trace; operator buttons, enabled for operators while the run is live.
"use strict";

const RUN = decodeURIComponent(location.pathname.split("/").pop());
const BASE = `/api/runs/${encodeURIComponent(RUN)}`;
const PAGE = 10;
let samplesToken = "", samplesHistory = [];

function follow(kind, onRow) {
  const source = new EventSource(`${BASE}/${kind}?follow=1`);
  source.onmessage = event => onRow(JSON.parse(event.data).row);
  source.addEventListener("end", () => source.close());  // the run ended: everything is sent
  return source;
}

let role = "viewer";

// Pause, Resume and Checkpoint act on a live run, for an operator: disabled otherwise, saying why.
function setButtons(live) {
  for (const button of document.querySelectorAll("#controls button")) {
    const why = role === "viewer" ? "needs the operator role" : (live ? "" : "the run has ended");
    button.disabled = Boolean(why);
    button.title = why;
  }
}

async function refreshStatus() {
  const s = await api(`${BASE}/status`);
  const l = s.learner || {};
  setButtons(s.run.live);
  document.getElementById("state").textContent = s.run.live ? (l.state || l.error || "-") : (l.state || "ENDED");
  document.getElementById("step").textContent = l.step ?? s.run.last_step;
  document.getElementById("total").textContent = Number(l.total_steps) || "-";  // 0: not known
  document.getElementById("policy").textContent = l.policy_version ?? "-";
  document.querySelector("#services tbody").replaceChildren(...s.replicas.map(r => el("tr", {"data-replica": r.replica},
    el("td", {}, r.service), el("td", {}, r.replica), el("td", {}, r.has_weights_version ? `v${r.weights_version}` : "-"),
    el("td", {class: r.health === "SERVING" ? "ok" : "bad"}, r.health || r.error), el("td", {}, r.service === "rollout" ? r.groups_generated : "-"),
    el("td", {}, r.grpc))));
  document.querySelector("#queues tbody").replaceChildren(...s.queues.map(q => el("tr", {},
    el("td", {}, q.stream), el("td", {}, q.consumer), el("td", {}, q.pending), el("td", {}, q.ack_pending))));
}

function addAlert(row) {
  const list = document.getElementById("alerts");
  list.querySelector(".none")?.remove();
  list.prepend(el("li", {class: `alert ${row.severity || ""}`},
    `step ${row.step ?? "-"} · ${row.severity || ""} · ${row.rule || row.name || ""}: ${row.message || JSON.stringify(row)}`));
}

function addEvent(row) {
  const list = document.getElementById("events");
  list.querySelector(".none")?.remove();
  const what = row.changes ? JSON.stringify(row.changes) : (row.step !== undefined ? `step ${row.step}` : "");
  list.prepend(el("li", {class: "event"}, `${row.when} · ${row.who} · ${row.action} ${what}`));
}

function componentsText(components) {
  return Object.entries(components || {}).map(([name, c]) => `${name}=${fmt(c.value)} ${c.status}`).join(", ");
}

async function loadSamples(token) {
  const split = document.getElementById("split").value;
  const page = await api(`${BASE}/samples?page_size=${PAGE}&split=${split}&page_token=${token}`);
  samplesToken = page.next_page_token;
  const start = Number(token || 0);
  document.getElementById("samples-range").textContent = page.total ? `${start + 1}–${start + page.samples.length} of ${page.total}` : "none yet";
  document.querySelector("#samples tbody").replaceChildren(...page.samples.map(s => el("tr",
    {class: "sample", "data-group": s.group_id, onclick: () => openTrace(s)},
    el("td", {}, s.step), el("td", {}, s.split), el("td", {}, s.group_id), el("td", {class: "text"}, s.prompt),
    el("td", {class: "text"}, s.response), el("td", {}, fmt(s.reward)), el("td", {}, componentsText(s.components)),
    el("td", {}, s.finish_reason), el("td", {}, s.turns ? s.turns.length : "-"))));
}

// The parts of a turn's reward the environment named (a verifiers rubric's functions).
function detailsText(details) {
  return details ? ` (${Object.entries(details).map(([name, v]) => `${name}=${fmt(v)}`).join(", ")})` : "";
}

// What the environment answered, without the chat template's markup (the gateway parses it
// into messages: sample_view.py); a role is named only when the answer holds several.
function observationText(turn) {
  const messages = turn.observation_messages || [{role: "tool", content: turn.observation}];
  return messages.length === 1 ? messages[0].content : messages.map(m => `[${m.role}] ${m.content}`).join("\n");
}

// An agent's episode, turn by turn: what the model wrote, the tools it called (and why a call
// failed), what the environment answered, and the turn's reward.
function episodeView(sample) {
  const turns = sample.turns.map(t => el("li", {class: "turn", "data-turn": t.index, "data-reward": t.reward ?? ""},
    el("div", {class: "turn-head"}, `turn ${t.index} · reward ${fmt(t.reward)}${detailsText(t.reward_details)} · ${t.finish_reason}${t.done ? " · done" : ""}`),
    el("pre", {class: "turn-text"}, t.text),
    ...(t.tool_calls.length ? [el("ul", {class: "tool-calls"}, ...t.tool_calls.map(c =>
      el("li", {class: c.error ? "tool-call bad" : "tool-call"}, `${c.name}(${c.arguments})${c.error ? ` — ${c.error}` : ""}`)))] : []),
    ...(t.observation ? [el("pre", {class: "observation"}, `${observationText(t)}${t.observation_truncated ? "\n[truncated]" : ""}`)] : [])));
  return el("div", {id: "episode", "data-turns": sample.turns.length},
    el("h3", {}, `Episode in ${sample.environment || "?"} · ${sample.turns.length} turns · environment reward ${fmt(sample.env_reward)}`),
    el("ol", {class: "turns"}, ...turns));
}

async function openTrace(sample) {
  const panel = document.getElementById("trace-panel");
  panel.hidden = false;
  document.getElementById("trace-group").textContent = sample.group_id;
  document.getElementById("sample-detail").replaceChildren(
    el("h3", {}, sample.prompt_read ? "Prompt as the model read it" : "Prompt"),
    el("pre", {class: "prompt"}, sample.prompt_read || sample.prompt),
    el("pre", {}, `response: ${sample.response}\nreward: ${fmt(sample.reward)}  (${componentsText(sample.components)})`),
    ...(sample.turns ? [episodeView(sample)] : []));
  const target = document.getElementById("waterfall");
  try {
    const trace = await api(`${BASE}/groups/${encodeURIComponent(sample.group_id)}/trace`);
    renderWaterfall(target, trace.spans, trace.linked, `${sample.group_id}/${sample.sample_index}`);
  } catch (err) { target.replaceChildren(el("p", {class: "error"}, err.message)); }
  panel.scrollIntoView();
}

function setUpButtons(who) {
  role = who.role;
  setButtons(false);  // until the first status says the run is live
  for (const button of document.querySelectorAll("#controls button")) {
    button.addEventListener("click", async () => {
      const out = document.getElementById("action-result");
      out.textContent = `${button.dataset.verb}…`;
      try {
        const reply = await api(`${BASE}/${button.dataset.verb}`, {method: "POST", body: JSON.stringify({})});
        out.textContent = reply.message;
      } catch (err) { out.textContent = `${button.dataset.verb} refused: ${err.message}`; out.className = "error"; }
      refreshStatus();
    });
  }
}

session().then(async who => {
  document.getElementById("run-name").textContent = RUN;
  document.getElementById("run-page").hidden = false;
  setUpButtons(who);
  const charts = new Charts(document.getElementById("charts"));
  follow("metrics", row => charts.add(row));
  follow("alerts", addAlert);
  follow("events", addEvent);
  document.getElementById("samples-older").onclick = () => { if (samplesToken) { samplesHistory.push(samplesToken); loadSamples(samplesToken); } };
  document.getElementById("samples-newer").onclick = () => { samplesHistory.pop(); loadSamples(samplesHistory.at(-1) || ""); };
  document.getElementById("split").onchange = () => { samplesHistory = []; loadSamples(""); };
  await Promise.all([refreshStatus(), loadSamples("")]);
  setInterval(refreshStatus, 2000);
  setInterval(() => { if (!samplesHistory.length) loadSamples(""); }, 3000);  // the newest page stays live
});
