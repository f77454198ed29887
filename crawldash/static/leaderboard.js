"use strict";
// crawldash's leaderboard, at nodes/leaderboard/: the reachable IPv4/IPv6 nodes of the
// newest crawl by Peer Index (api/v1/nodes/leaderboard/), searchable by address or user
// agent (q), paged, each row linking to the node's page. The search and page are kept in
// the page's own query string, so that a view can be linked to. Updates on a new crawl.
// Every URL is relative: the page works at /nodes/leaderboard/, under /n/NAME/ and behind
// a proxy at a sub-path.
const ROOT = "../../";
const LIMIT = 50;
const INDEXES = ["vi", "si", "hi", "ai", "pi", "dli", "dui", "wli", "wui", "mli", "mui"];
const $ = (id) => document.getElementById(id);
let shownCrawl = null;

// Times in UTC, to the minute, as on every page of crawldash.
function fmtTime(seconds) {
  return `${new Date(seconds * 1000).toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

function wanted() {
  const params = new URLSearchParams(location.search);
  const page = Math.max(1, Number.parseInt(params.get("page") ?? "1", 10) || 1);
  return { q: (params.get("q") ?? "").trim(), page };
}

function go(q, page) {
  const params = new URLSearchParams();
  if (q) params.set("q", q);
  if (page > 1) params.set("page", String(page));
  const query = params.toString();
  history.pushState(null, "", query ? `?${query}` : location.pathname);
  show().catch(report);
}

// The node's page, a sibling of this one: ../<address>-<port>/, IPv6 without brackets.
function nodeLink(address) {
  const [, host, port] = address.match(/^\[?(.*?)\]?:(\d+)$/);
  const link = document.createElement("a");
  link.href = `../${encodeURIComponent(host).replaceAll("%3A", ":")}-${port}/`;
  link.textContent = address;
  return link;
}

function cell(text, numeric) {
  const td = document.createElement("td");
  td.textContent = text;
  if (numeric) td.className = "n";
  return td;
}

async function show() {
  const { q, page } = wanted();
  $("board-q").value = q;
  const query = new URLSearchParams({ limit: String(LIMIT), page: String(page) });
  if (q) query.set("q", q);
  const answer = await getJSON(`${ROOT}api/v1/nodes/leaderboard/?${query}`);
  shownCrawl = answer.timestamp;
  const pages = Math.max(1, Math.ceil(answer.count / LIMIT));
  $("board-count").textContent = (q ? `${answer.count.toLocaleString()} nodes hold “${q}”`
    : `${answer.count.toLocaleString()} nodes ranked`) + ` in the crawl of ${fmtTime(answer.timestamp)}.`;
  $("board-page").textContent = `Page ${page.toLocaleString()} of ${pages.toLocaleString()}`;
  $("board-previous").disabled = answer.previous == null;
  $("board-next").disabled = answer.next == null;
  $("board").querySelector("tbody").replaceChildren(...answer.results.map((row) => {
    const tr = document.createElement("tr");
    const node = document.createElement("th");
    node.scope = "row";
    node.append(nodeLink(row.node));
    tr.append(cell(row.rank.toLocaleString(), true), node, cell(row.user_agent ?? "unknown", false),
      cell(row.peer_index, true), ...INDEXES.map((name) => cell(row[name], true)));
    tr.dataset.node = row.node;
    return tr;
  }));
  document.body.dataset.count = String(answer.count);
  document.body.dataset.shown = String(answer.timestamp);
}

function listen() {
  const source = new EventSource(`${ROOT}api/events`);
  source.addEventListener("open", () => { $("live").textContent = "live"; });
  source.addEventListener("error", () => { $("live").textContent = "reconnecting…"; });
  source.addEventListener("snapshot", (event) => {
    const timestamp = JSON.parse(event.data).timestamp;
    if (shownCrawl != null && timestamp !== shownCrawl) show().catch(report);
  });
}

function report(error) {
  $("board-error").textContent = error.message;
  $("board-error").hidden = false;
}

$("board-form").addEventListener("submit", (event) => {
  event.preventDefault();
  go($("board-q").value.trim(), 1);
});
$("board-previous").addEventListener("click", () => go(wanted().q, wanted().page - 1));
$("board-next").addEventListener("click", () => go(wanted().q, wanted().page + 1));
window.addEventListener("popstate", () => show().catch(report));
show().then(listen, report);
