// Shared by the dashboard pages: JSON calls to the gateway's API (the session cookie
// carries the token), the login form, and small DOM helpers. Plain browser JavaScript.
"use strict";

async function api(path, options = {}) {
  const response = await fetch(path, {credentials: "same-origin", ...options,
    headers: {"Content-Type": "application/json", ...(options.headers || {})}});
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw Object.assign(new Error(body.error || response.statusText), {status: response.status});
  return body;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v; else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "style") node.style.cssText = v;  // through the CSSOM: the CSP refuses style attributes
    else node.setAttribute(k, v);
  }
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

function fmt(value) {
  if (value === null || value === undefined) return "-";
  if (typeof value !== "number") return String(value);
  return Math.abs(value) >= 1000 || Number.isInteger(value) ? String(Math.round(value * 100) / 100) : value.toPrecision(4);
}

// Who is logged in ({name, role}); shows the login form and resolves once a token is accepted.
async function session() {
  try { return showWho(await api("/api/session")); } catch (err) { if (err.status !== 401) throw err; }
  const form = document.getElementById("login");
  form.hidden = false;
  return new Promise(resolve => form.addEventListener("submit", async event => {
    event.preventDefault();
    try {
      const who = await api("/api/session", {method: "POST", body: JSON.stringify({token: document.getElementById("token").value})});
      form.hidden = true;
      resolve(showWho(who));
    } catch (err) { document.getElementById("login-error").textContent = err.message; }
  }));
}

function showWho(who) {
  document.getElementById("who").textContent = `${who.name} (${who.role}) `;
  document.getElementById("who").append(el("button", {id: "logout", onclick: async () => {
    await api("/api/session", {method: "DELETE"}); location.reload(); }}, "log out"));
  return who;
}
