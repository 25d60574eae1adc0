/**
 * The dashboard's stylesheet and script, served by the dashboard itself (`/assets/…`): no CDN,
 * no build step. The script only swaps in server-rendered `<main>` content (live refresh) and
 * sends actions by POST with the token header; it never builds markup from data.
 */

/** The header that carries the action token. */
export const TOKEN_HEADER = "x-leasehold-token"

/** The header by which the script asks for the `<main>` content alone (a live refresh). */
export const FRAGMENT_HEADER = "x-leasehold-fragment"

/** The stylesheet. */
export const CSS = `
:root { color-scheme: light; --fg: #1d2433; --muted: #5f6b7a; --line: #dde2ea; --bg: #f6f7f9; --accent: #2456c9;
  --ok: #1f8a4c; --bad: #c23030; --warn: #b26b00; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--fg); background: var(--bg); }
header { display: flex; gap: 1.5rem; align-items: center; padding: .6rem 1.5rem; background: #1d2433; color: #fff; flex-wrap: wrap; }
header a { color: #cfd8e6; text-decoration: none; }
header a.brand { color: #fff; font-weight: 700; letter-spacing: .02em; }
header nav { display: flex; gap: 1rem; }
header nav a[aria-current="page"] { color: #fff; border-bottom: 2px solid #7ea2ff; }
header .mode { margin-left: auto; color: #cfd8e6; font-size: .9em; }
header form { margin-left: auto; display: flex; gap: .4rem; }
main { padding: 1rem 1.5rem 3rem; max-width: 1200px; }
h1 { font-size: 1.4rem; margin: .4rem 0 1rem; word-break: break-all; }
h2 { font-size: 1.05rem; margin: 1.6rem 0 .6rem; }
a { color: var(--accent); }
table { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid var(--line); }
th, td { text-align: left; padding: .35rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: #eef1f5; font-weight: 600; font-size: .9em; }
.mono, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .92em; }
pre { background: #fff; border: 1px solid var(--line); padding: .8rem; overflow: auto; white-space: pre-wrap; word-break: break-word; }
pre.error, .error, .expired, .gone { color: var(--bad); }
.lines { white-space: pre-wrap; word-break: break-word; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .9em; }
.none, .zero, .empty, .note, .updated { color: var(--muted); }
.status { padding: .05rem .45rem; border-radius: .6rem; font-size: .85em; background: #e7ebf1; }
.status-completed { background: #dff3e7; color: var(--ok); }
.status-failed, .status-interrupted { background: #f8e0e0; color: var(--bad); }
.status-processing { background: #e1e9fb; color: var(--accent); }
.status-pending { background: #fbefd9; color: var(--warn); }
.status-cancelled { background: #ececec; color: var(--muted); text-decoration: line-through; }
dl.stats { display: flex; gap: 1rem; flex-wrap: wrap; margin: 0; }
dl.stats div { background: #fff; border: 1px solid var(--line); padding: .6rem 1rem; min-width: 10rem; }
dl.stats dt { color: var(--muted); font-size: .85em; }
dl.stats dd { margin: 0; font-size: 1.3rem; font-weight: 600; }
dl.fields { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; background: #fff; border: 1px solid var(--line); padding: .8rem; }
dl.fields div { display: contents; }
dl.fields dt { color: var(--muted); }
dl.fields dd { margin: 0; word-break: break-all; }
figure.chart { margin: 0; background: #fff; border: 1px solid var(--line); padding: .8rem; }
figure.chart svg { width: 100%; height: 140px; display: block; }
figure.chart figcaption { display: flex; justify-content: space-between; color: var(--muted); font-size: .85em; margin-top: .3rem; }
.bar-completed, .key-completed { fill: var(--ok); background: var(--ok); }
.bar-failed, .key-failed { fill: var(--bad); background: var(--bad); }
.axis { stroke: var(--line); }
.key { display: inline-block; width: .7em; height: .7em; margin: 0 .25em 0 .6em; }
form.filters { display: flex; gap: 1rem; align-items: end; margin-bottom: 1rem; flex-wrap: wrap; }
form.filters label { display: flex; flex-direction: column; font-size: .85em; color: var(--muted); }
input, select, button { font: inherit; padding: .25rem .5rem; }
button.action { cursor: pointer; }
nav.pager { display: flex; gap: 1rem; margin-top: .8rem; }
.actions { margin-bottom: .8rem; display: flex; gap: .5rem; }
p.why { background: #fff; border: 1px solid var(--line); border-left: 3px solid var(--accent); padding: .6rem .8rem; margin: 0 0 .8rem; word-break: break-word; }
#flash { margin: 0; padding: .5rem 1.5rem; background: #e1e9fb; }
#flash:empty { display: none; }
#flash.bad { background: #f8e0e0; color: var(--bad); }
`

/** The script: live refresh of `<main>`, the token kept in the tab's sessionStorage, actions by POST. */
export const JS = `"use strict";
(function () {
  var KEY = "leasehold-dashboard-token";
  var main = document.getElementById("main");
  var flash = document.getElementById("flash");
  var FLASH = "leasehold-dashboard-flash";
  function say(text, bad) { flash.textContent = text; flash.className = bad ? "bad" : ""; }
  if (sessionStorage.getItem(FLASH)) { say(sessionStorage.getItem(FLASH), false); sessionStorage.removeItem(FLASH); }
  function refresh() {
    return fetch(location.href, { headers: { "${FRAGMENT_HEADER}": "main" }, cache: "no-store" }).then(function (res) {
      if (!res.ok) throw new Error(res.status + " " + res.statusText);
      return res.text();
    }).then(function (text) {
      main.innerHTML = text;
      main.setAttribute("data-refreshed", new Date().toISOString());
    });
  }
  var every = Number(main.getAttribute("data-refresh"));
  if (every > 0) setInterval(function () { if (!document.hidden) refresh().catch(function () {}); }, every);
  var form = document.getElementById("token-form");
  if (form) {
    form.token.value = sessionStorage.getItem(KEY) || "";
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      sessionStorage.setItem(KEY, form.token.value);
      say(form.token.value === "" ? "token cleared" : "token set for this tab", false);
    });
  }
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("button[data-action]") : null;
    if (!button) return;
    var question = button.getAttribute("data-confirm");
    if (question && !window.confirm(question)) return;
    button.disabled = true;
    fetch(button.getAttribute("data-action"), {
      method: "POST",
      headers: { "${TOKEN_HEADER}": sessionStorage.getItem(KEY) || "" }
    }).then(function (res) {
      return res.json().catch(function () { return { error: res.status + " " + res.statusText }; }).then(function (body) {
        var after = button.getAttribute("data-after");
        if (res.ok && after) { sessionStorage.setItem(FLASH, body.message); location.assign(after); return; }
        say(res.ok ? body.message : body.error, !res.ok);
        return res.ok ? refresh() : undefined;
      });
    }).catch(function (e) { say(String(e), true); }).then(function () { button.disabled = false; });
  });
})();
`
