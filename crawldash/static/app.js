"use strict";
// crawldash dashboard: tiles from /api/status and /api/changes, a chart from /api/history,
// a check form with the node's presence from /api/presence, and live updates from
// /api/events. No framework; uPlot draws the chart.
const NETWORKS = ["ipv4", "ipv6", "onion", "i2p", "cjdns"];
const COLORS = ["#0b5cad", "#1a7f37", "#8250df", "#bf8700", "#cf222e", "#57606a"];
const $ = (id) => document.getElementById(id);
let chart = null;
let checked = null;  // the address whose presence is shown

function fmtTime(seconds) {
  return seconds == null ? "—"
    : new Date(seconds * 1000).toLocaleString(undefined, { dateStyle: "short", timeStyle: "short" });
}
function fmtDuration(seconds) {
  if (seconds == null) return "—";
  const s = Math.round(seconds);
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}
function fmtNumber(n) { return n == null ? "—" : n.toLocaleString(); }

function showStatus(status) {
  $("tile-state").textContent = status.state;
  $("tile-queue").textContent = fmtNumber(status.queue_size);
  $("tile-height").textContent = fmtNumber(status.height);
  $("tile-elapsed").textContent = fmtDuration(status.last_elapsed);
  $("tile-snapshot").textContent = fmtTime(status.snapshot_timestamp);
  $("tile-age").textContent = fmtDuration(status.snapshot_age);
  const alarms = [];
  if (status.stale) alarms.push(status.snapshot_timestamp == null
    ? "No crawl snapshot has been loaded yet."
    : `Stale data: the latest crawl is ${fmtDuration(status.snapshot_age)} old.`);
  if (status.stuck) alarms.push(`The crawler looks stuck (state: ${status.state}).`);
  $("alarm").textContent = alarms.join(" ");
  $("alarm").hidden = alarms.length === 0;
  document.body.dataset.status = status.snapshot_timestamp ?? "";
}

async function getJSON(url) {
  // no-cache: revalidate (a cheap 304) rather than trust max-age, as crawls can come early
  const response = await fetch(url, { cache: "no-cache", headers: { Accept: "application/json" } });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error ? body.error.message : response.statusText);
  return body;
}

async function refreshStatus() { showStatus(await getJSON("/api/status")); }

async function refreshHeadline() {
  const snapshot = await getJSON("/api/breakdown?by=network");
  const points = await getJSON("/api/history?limit=2");
  $("tile-reachable").textContent = fmtNumber(snapshot.total_nodes);
  const [previous, latest] = points.length === 2 ? points : [null, points[0]];
  const change = previous && latest && latest.timestamp === snapshot.timestamp
    ? snapshot.total_nodes - previous.reachable : null;
  $("tile-change").textContent = change == null ? ""
    : `${change >= 0 ? "+" : "−"}${Math.abs(change).toLocaleString()} since the crawl before`;
  document.body.dataset.reachable = String(snapshot.total_nodes);
}

async function refreshChurn() {
  const changes = await getJSON("/api/changes");
  $("tile-churn").textContent = changes.from == null ? "—"
    : `+${changes.joined_count.toLocaleString()} joined, −${changes.left_count.toLocaleString()} left`;
  document.body.dataset.joined = String(changes.joined_count);
  document.body.dataset.left = String(changes.left_count);
}

const TABLES = ["network", "country", "user_agent", "asn"];

async function refreshBreakdowns() {
  for (const by of TABLES) {
    const body = await getJSON(`/api/breakdown?by=${by}&limit=8`);
    const rows = body.rows.map((row) => {
      const tr = document.createElement("tr");
      const name = row.value == null ? "unknown" : String(row.value);
      const label = row.org ? `${name} ${row.org}` : name;
      for (const [text, css] of [[label, ""], [row.nodes.toLocaleString(), "n"],
                                 [`${(row.share * 100).toFixed(1)}%`, "n"]]) {
        const td = document.createElement("td");
        td.textContent = text;
        if (css) td.className = css;
        tr.append(td);
      }
      return tr;
    });
    document.querySelector(`#by-${by} tbody`).replaceChildren(...rows);
  }
}

async function search(event) {
  if (event) event.preventDefault();
  const q = $("search").value.trim();
  const query = q ? `q=${encodeURIComponent(q)}` : "";
  $("csv-link").href = `/api/nodes?${query}${query ? "&" : ""}format=csv`;
  const page = await getJSON(`/api/nodes?${query}${query ? "&" : ""}limit=20`);
  $("search-count").textContent = `${page.count.toLocaleString()} nodes match` +
    (page.count > page.results.length ? `; the first ${page.results.length}:` : ":");
  $("search-results").replaceChildren(...page.results.map((node) => {
    const li = document.createElement("li");
    li.textContent = `${node.address}: ${node.user_agent ?? "unknown agent"}, ` +
      `${[node.city, node.country].filter(Boolean).join(", ") || "no location"}, ` +
      `${node.org ?? "no provider"}, height ${node.height}`;
    return li;
  }));
  document.body.dataset.searched = String(page.count);
}

async function refreshChart() {
  const limit = $("range").value;
  const split = $("split").checked;
  const points = await getJSON(`/api/history?limit=${limit}&by=network`);
  const xs = points.map((p) => p.timestamp);
  const series = [{}, { label: "reachable", stroke: COLORS[0], width: 2 }];
  const data = [xs, points.map((p) => p.reachable)];
  if (split) {
    NETWORKS.forEach((name, i) => {
      series.push({ label: name, stroke: COLORS[i + 1], width: 1.5 });
      data.push(points.map((p) => (p.networks ? p.networks[name] : null)));
    });
  }
  const width = $("chart").clientWidth || 600;
  if (chart) chart.destroy();
  chart = new uPlot({ width, height: 320, series, axes: [{}, { size: 70 }],
                      scales: { x: { time: true } } }, data, $("chart"));
  document.body.dataset.points = String(xs.length);
}

async function check(event) {
  if (event) event.preventDefault();
  const result = $("check-result");
  const address = $("address").value.trim();
  $("check-presence").textContent = "";
  $("presence-strip").hidden = $("presence-legend").hidden = true;
  checked = null;
  try {
    const answer = await getJSON(`/api/check?address=${encodeURIComponent(address)}`);
    result.className = answer.reachable ? "found" : "missing";
    result.textContent = answer.reachable
      ? `${answer.address} is reachable (${answer.node.user_agent ?? "unknown agent"}, height ${answer.node.height}).`
      : `${answer.address} is not in the latest crawl.`;
    const p = answer.presence;
    $("check-presence").textContent = p.seen === 0
      ? `Not seen in any of the ${p.crawls.toLocaleString()} crawls held.`
      : `Seen in ${p.seen.toLocaleString()} of ${p.crawls.toLocaleString()} crawls held; ` +
        `first seen ${fmtTime(p.first_seen)}, last seen ${fmtTime(p.last_seen)}.`;
    document.body.dataset.seen = `${p.seen}/${p.crawls}`;
    checked = answer.address;
    await showPresence(checked);
  } catch (error) {
    result.className = "error";
    result.textContent = error.message;
  }
}

async function showPresence(address) {
  const limit = $("range").value;
  const runs = await getJSON(`/api/presence?address=${encodeURIComponent(address)}&limit=${limit}`);
  const strip = $("presence-strip");
  strip.replaceChildren(...runs.map((run) => {
    const span = document.createElement("span");
    span.className = run.present ? "present" : "absent";
    span.style.flexGrow = String(run.crawls);
    span.title = `${run.present ? "in" : "not in"} ${run.crawls} crawl${run.crawls === 1 ? "" : "s"}, ` +
      `${fmtTime(run.from)} to ${fmtTime(run.to)}`;
    return span;
  }));
  const present = runs.filter((run) => run.present).reduce((n, run) => n + run.crawls, 0);
  const total = runs.reduce((n, run) => n + run.crawls, 0);
  strip.setAttribute("aria-label", `${address} was in ${present} of the last ${total} crawls, ` +
    `in ${runs.filter((run) => run.present).length} runs`);
  strip.dataset.runs = String(runs.length);
  strip.dataset.present = String(present);
  strip.hidden = $("presence-legend").hidden = runs.length === 0;
}

function listen() {
  const source = new EventSource("/api/events");
  source.addEventListener("open", () => { $("live").textContent = "live"; });
  source.addEventListener("error", () => { $("live").textContent = "reconnecting…"; });
  source.addEventListener("status", (event) => showStatus(JSON.parse(event.data)));
  source.addEventListener("snapshot", () => {
    refreshChart().catch(report);
    refreshHeadline().catch(report);
    refreshBreakdowns().catch(report);
    refreshChurn().catch(report);
    if (checked) check().catch(report);
  });
}

function report(error) { $("live").textContent = `error: ${error.message}`; }

$("check-form").addEventListener("submit", check);
$("search-form").addEventListener("submit", (event) => search(event).catch(report));
$("range").addEventListener("change", () => {
  refreshChart().catch(report);
  if (checked) showPresence(checked).catch(report);
});
$("split").addEventListener("change", () => refreshChart().catch(report));
window.addEventListener("resize", () => { if (chart) chart.setSize({ width: $("chart").clientWidth, height: 320 }); });
refreshStatus().catch(report);
refreshChart().catch(report);
refreshHeadline().catch(report);
refreshBreakdowns().catch(report);
refreshChurn().catch(report);
listen();
setInterval(() => refreshStatus().catch(report), 30000);  // the age ticks between crawls
