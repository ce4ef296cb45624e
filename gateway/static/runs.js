// The runs page: the table of runs, refreshed every 5 s.
"use strict";

async function refreshRuns() {
  const {runs} = await api("/api/runs");
  const body = document.querySelector("#runs tbody");
  body.replaceChildren(...runs.map(r => el("tr", {"data-run": r.name},
    el("td", {}, el("a", {href: `/runs/${encodeURIComponent(r.name)}`}, r.name)),
    el("td", {}, r.live ? "live" : "ended"), el("td", {}, r.last_step),
    el("td", {}, r.updated_unix ? new Date(r.updated_unix * 1000).toLocaleTimeString() : "-"))));
}

session().then(async () => {
  document.getElementById("runs-page").hidden = false;
  await refreshRuns();
  setInterval(refreshRuns, 5000);
});
