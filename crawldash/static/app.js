"use strict";
// crawldash dashboard: the helpers every script of the page uses, the tiles from
// /api/status and /api/changes, the breakdowns, the node search and the chart of
// reachable nodes from /api/history. No framework; uPlot draws the charts. The page's
// other scripts, loaded after this one: trends.js (shares over time and distinct nodes),
// presence.js (the check form), networks.js (the switcher), map.js, propagation.js,
// checknow.js, and main.js last, which wires the controls and follows /api/events.
// Every URL is relative (no leading slash), so that the page works wherever it is served:
// at /, at /n/NAME/ (one network of several) and behind a proxy at a sub-path.
const NETWORKS = ["ipv4", "ipv6", "onion", "i2p", "cjdns"];
// The chart's colours, 3:1 or more against the page's background in each scheme.
const COLORS = {
  light: ["#0b5cad", "#1a7f37", "#8250df", "#bf8700", "#cf222e", "#57606a"],
  dark: ["#58a6ff", "#3fb950", "#a371f7", "#d29922", "#ff7b72", "#8b949e"],
};
const DARK = window.matchMedia("(prefers-color-scheme: dark)");
const $ = (id) => document.getElementById(id);
let chart = null;

// Every time on crawldash's pages in one form, in UTC, to the minute: 2026-11-27 22:10 UTC.
function fmtTime(seconds) {
  return seconds == null ? "—"
    : `${new Date(seconds * 1000).toISOString().slice(0, 16).replace("T", " ")} UTC`;
}
// uPlot's axes and legends in UTC too (its default is the browser's zone).
const UTC = (ts) => uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC");
// Names for values the API gives as keys or codes, as the tables show them.
const HEIGHT_BANDS = {
  consensus: "at the consensus height", ahead: "ahead of the consensus",
  behind_1_6: "1 to 6 blocks behind", behind_more: "more than 6 blocks behind",
};
const REGIONS = typeof Intl.DisplayNames === "function"
  ? new Intl.DisplayNames(["en"], { type: "region" }) : null;
let providers = {};  // ASN -> organisation, from the providers' breakdown
function countryName(code) {
  try {
    return (REGIONS && REGIONS.of(code)) || code;
  } catch {
    return code;  // not a region code
  }
}
// A value of a breakdown or of the history by key, named as a person reads it.
function valueName(by, value) {
  if (value == null || value === "unknown") return "unknown";
  if (value === "other") return "other";
  if (by === "country") return countryName(String(value));
  if (by === "height") return HEIGHT_BANDS[value] ?? String(value);
  if (by === "asn") return providers[value] ? `${value} ${providers[value]}` : String(value);
  if (by === "services") return `NODE_${value}`;
  return String(value);
}
function fmtDuration(seconds) {
  if (seconds == null) return "—";
  const s = Math.round(seconds);
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}
function fmtNumber(n) { return n == null ? "—" : n.toLocaleString(); }
function plural(n, word) { return `${n.toLocaleString()} ${word}${n === 1 ? "" : "s"}`; }
// A link to a node's page, nodes/<address>-<port>/ (bitnodes' form: IPv6 unbracketed).
function nodeLink(address, text) {
  const [, host, port] = address.match(/^\[?(.*?)\]?:(\d+)$/);
  const link = document.createElement("a");
  link.href = `nodes/${encodeURIComponent(host).replaceAll("%3A", ":")}-${port}/`;
  link.textContent = text;
  return link;
}

function showStatus(status) {
  $("tile-state").textContent = status.state;
  $("tile-queue").textContent = fmtNumber(status.queue_size);
  $("tile-height").textContent = fmtNumber(status.height);
  $("tile-elapsed").textContent = fmtDuration(status.last_elapsed);
  $("tile-snapshot").textContent = fmtTime(status.snapshot_timestamp);
  $("tile-age").textContent = fmtDuration(status.snapshot_age);
  const alarms = [];
  if (status.snapshot_timestamp == null) {
    alarms.push(rejectedNote ?? "No crawl snapshot has been loaded yet.");
    showNothingLoaded().catch(report);
  } else if (status.stale) {
    alarms.push(`Stale data: the latest crawl is ${fmtDuration(status.snapshot_age)} old.`);
  }
  if (status.stuck) alarms.push(`The crawler looks stuck (state: ${status.state}).`);
  $("alarm").textContent = alarms.join(" ");
  $("alarm").hidden = alarms.length === 0;
  document.body.dataset.status = status.snapshot_timestamp ?? "";
}

// No crawl loaded: why, from the rejected files /metrics counts by kind (the log names
// each file), and nothing left waiting ("…") where no crawl can say anything.
const REJECTIONS = {
  empty: "empty", too_large: "too large", not_json: "not JSON", decode: "not a crawl",
  no_usable_rows: "no usable row", not_a_file: "not a regular file", unreadable: "unreadable",
  future: "named after a future time", misnamed: "misnamed", loader_died: "killed its loader",
  timeout: "took too long to load", unprepared: "could not be prepared",
};
let rejectedNote = null;
async function showNothingLoaded() {
  let text = "";
  try {
    const response = await fetch("metrics", { cache: "no-cache" });
    text = response.ok ? await response.text() : "";
  } catch {
    text = "";
  }
  const network = document.body.dataset.network;
  const kinds = {};
  for (const [, labels, count] of text.matchAll(/^crawldash_files_rejected(?:_total)?\{([^}]*)\} (\d+)/gm)) {
    const kind = /kind="([^"]*)"/.exec(labels)?.[1];
    const named = /network="([^"]*)"/.exec(labels)?.[1];
    if (kind && Number(count) > 0 && (!network || named === network)) {
      kinds[kind] = (kinds[kind] ?? 0) + Number(count);
    }
  }
  const files = Object.values(kinds).reduce((a, b) => a + b, 0);
  rejectedNote = files === 0 ? "No crawl has been loaded yet: the data folder has no crawl file crawldash could read so far."
    : `No crawl could be loaded: ${plural(files, "crawl file")} ${files === 1 ? "was" : "were"} rejected (` +
      Object.entries(kinds).map(([kind, n]) => `${n.toLocaleString()} ${REJECTIONS[kind] ?? kind.replaceAll("_", " ")}`).join(", ") +
      "); crawldash's log names each file and why.";
  if (document.body.dataset.status === "") {  // still no crawl: say why
    $("alarm").textContent = rejectedNote;
    $("alarm").hidden = false;
  }
  document.body.dataset.rejected = String(files);
  for (const id of ["tile-reachable", "tile-churn", "unique-day", "unique-week", "unique-month"]) {
    if ($(id).textContent === "…") $(id).textContent = "—";
  }
  $("map").setAttribute("aria-label", "Map of the nodes: no crawl loaded");
  $("map").replaceChildren(Object.assign(document.createElement("p"), { className: "empty", textContent: "No crawl loaded: nothing to map." }));
}

// An error answer: the API's {"error": {"status", "code", "message"}}, or what is known of
// one that is not in that shape (from a proxy, say).
class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
  }
}

async function getJSON(url) {
  let response;
  try {
    // no-cache: revalidate (a cheap 304) rather than trust max-age, as crawls can come early
    response = await fetch(url, { cache: "no-cache", headers: { Accept: "application/json" } });
  } catch (error) {
    throw new ApiError(0, "unreachable", `crawldash cannot be reached (${error.message})`);
  }
  if (!response.ok) {
    let detail = null;
    try {
      const body = await response.json();
      if (body && body.error && typeof body.error.message === "string") detail = body.error;
    } catch {
      // not JSON: described by the status below
    }
    throw detail
      ? new ApiError(detail.status ?? response.status, detail.code, detail.message)
      : new ApiError(response.status, "http_error",
        `crawldash answered ${response.status}${response.statusText ? ` ${response.statusText}` : ""}`);
  }
  try {
    return await response.json();
  } catch {
    throw new ApiError(response.status, "bad_body",
      `crawldash answered ${url} with a body that is not JSON`);
  }
}

async function refreshStatus() { showStatus(await getJSON("api/status")); }

async function refreshHeadline() {
  const snapshot = await getJSON("api/breakdown?by=network");
  const points = await getJSON("api/history?limit=2");
  $("tile-reachable").textContent = fmtNumber(snapshot.total_nodes);
  const [previous, latest] = points.length === 2 ? points : [null, points[0]];
  const change = previous && latest && latest.timestamp === snapshot.timestamp
    ? snapshot.total_nodes - previous.reachable : null;
  $("tile-change").textContent = change == null ? ""
    : `${change >= 0 ? "+" : "−"}${Math.abs(change).toLocaleString()} since the crawl before`;
  document.body.dataset.reachable = String(snapshot.total_nodes);
}

async function refreshChurn() {
  const changes = await getJSON("api/changes");
  $("tile-churn").textContent = changes.from == null ? "—"
    : `+${changes.joined_count.toLocaleString()} joined, −${changes.left_count.toLocaleString()} left`;
  document.body.dataset.joined = String(changes.joined_count);
  document.body.dataset.left = String(changes.left_count);
}

const TABLES = ["network", "country", "user_agent", "asn"];

async function refreshProviders() {
  const body = await getJSON("api/breakdown?by=asn&limit=100");
  providers = Object.fromEntries(body.rows.filter((row) => row.org).map((row) => [row.value, row.org]));
}

async function refreshBreakdowns() {
  for (const by of TABLES) {
    const body = await getJSON(`api/breakdown?by=${by}&limit=8`);
    const rows = body.rows.map((row) => {
      const tr = document.createElement("tr");
      const name = row.value == null ? "unknown" : String(row.value);
      const label = by === "country" && row.value != null ? `${countryName(name)} (${name})`
        : row.org ? `${name} ${row.org}` : name;
      const th = document.createElement("th");
      th.scope = "row";
      th.textContent = label;
      tr.append(th);
      for (const text of [row.nodes.toLocaleString(), `${(row.share * 100).toFixed(1)}%`]) {
        const td = document.createElement("td");
        td.textContent = text;
        td.className = "n";
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
  await listNodes(q ? `q=${encodeURIComponent(q)}` : "", "match");
}

// The nodes of /api/nodes?QUERY, the first 20 listed, every one in the CSV link; `what`
// ends the count's sentence ("match", or "in Germany (DE)" from the map).
async function listNodes(query, what) {
  $("csv-link").href = `api/nodes?${query}${query ? "&" : ""}format=csv`;
  let page;
  try {
    page = await getJSON(`api/nodes?${query}${query ? "&" : ""}limit=20`);
  } catch (error) {
    $("search-count").className = "error";
    $("search-count").textContent = error.message;
    $("search-results").replaceChildren();
    return;
  }
  $("search-count").className = "";
  $("search-count").textContent = `${page.count.toLocaleString()} nodes ${what}` +
    (page.count > page.results.length ? `; the first ${page.results.length}:` : ":");
  $("search-results").replaceChildren(...page.results.map((node) => {
    const li = document.createElement("li");
    li.append(nodeLink(node.address, node.address), `: ${node.user_agent ?? "unknown agent"}, ` +
      `${[node.city, node.country].filter(Boolean).join(", ") || "no location"}, ` +
      `${node.org ?? "no provider"}, height ${node.height}`);
    return li;
  }));
  document.body.dataset.searched = String(page.count);
}

// The chart's text alternative: what it plots, over when, and its latest, lowest and
// highest values (and each network's latest, when split).
function describeChart(points, split) {
  if (points.length === 0) return "Chart of reachable nodes: no crawls held yet";
  const reachable = points.map((p) => p.reachable);
  const latest = points[points.length - 1];
  let text = `Chart of reachable nodes, in UTC, over the last ${points.length.toLocaleString()} ` +
    `crawl${points.length === 1 ? "" : "s"}, ${fmtTime(points[0].timestamp)} to ` +
    `${fmtTime(latest.timestamp)}: latest ${fmtNumber(latest.reachable)}, ` +
    `lowest ${fmtNumber(Math.min(...reachable))}, highest ${fmtNumber(Math.max(...reachable))}`;
  if (split && latest.networks) {
    text += "; latest by address type: " +
      NETWORKS.map((name) => `${name} ${fmtNumber(latest.networks[name] ?? 0)}`).join(", ");
  }
  return text;
}

async function refreshChart() {
  const limit = $("range").value;
  const split = $("split").checked;
  const points = await getJSON(`api/history?limit=${limit}&by=network`);
  const colors = DARK.matches ? COLORS.dark : COLORS.light;
  const css = getComputedStyle(document.documentElement);
  const fg = css.getPropertyValue("--fg").trim();
  const grid = css.getPropertyValue("--grid").trim();
  const xs = points.map((p) => p.timestamp);
  const series = [{}, { label: "reachable", stroke: colors[0], width: 2 }];
  const data = [xs, points.map((p) => p.reachable)];
  if (split) {
    NETWORKS.forEach((name, i) => {
      series.push({ label: name, stroke: colors[i + 1], width: 1.5 });
      data.push(points.map((p) => (p.networks ? p.networks[name] : null)));
    });
  }
  const axis = { stroke: fg, grid: { stroke: grid }, ticks: { stroke: grid } };
  const width = $("chart").clientWidth || 600;
  if (chart) chart.destroy();
  series[0] = { label: "time (UTC)" };
  chart = new uPlot({ width, height: 320, series, axes: [axis, { ...axis, size: 70 }], tzDate: UTC,
                      scales: { x: { time: true } } }, data, $("chart"));
  $("chart").setAttribute("aria-label", describeChart(points, split));
  $("chart").dataset.scheme = DARK.matches ? "dark" : "light";
  document.body.dataset.points = String(xs.length);
}

function report(error) { $("live").textContent = `error: ${error.message}`; }
