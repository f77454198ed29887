"use strict";
// crawldash dashboard: tiles from /api/status and /api/changes, charts from /api/history
// (reachable nodes, and shares over time) with /api/unique's distinct nodes,
// a check form with the node's presence from /api/presence, and live updates from
// /api/events. No framework; uPlot draws the chart. map.js draws the map and
// propagation.js block propagation, with the helpers defined here.
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
// The address whose check is shown, as the API spelled it: a new crawl or another range
// re-checks it, whatever has since been typed in the box.
let checked = null;
let checks = 0;  // counts checks begun, so that only the latest one's answer is shown

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

// Over time: the nodes' shares by one key, stacked (each crawl's layers add up to its
// nodes; service bits are lines, as a node counts once per bit it sets), the share of the
// user agents that hold a text as a dashed line, and distinct nodes over three windows.
const TREND_TOP = 8;  // values shown, then unknown and other
// Layer colours, 3:1 or more against the page's background in each scheme; the last two
// (unknown, other) are greys.
const LAYERS = {
  light: ["#0b5cad", "#1a7f37", "#8250df", "#bf8700", "#cf222e", "#0a7c86", "#a0537a",
    "#953800", "#6e7781", "#57606a"],
  dark: ["#58a6ff", "#3fb950", "#a371f7", "#d29922", "#ff7b72", "#39c5cf", "#db61a2",
    "#f0883e", "#8b949e", "#6e7681"],
};
const UNIQUE = [[86400, "unique-day"], [604800, "unique-week"], [2592000, "unique-month"]];
let trendChart = null;

function percent(part, whole) { return whole ? (100 * part) / whole : null; }
function fmtPercent(value) { return value == null ? "—" : `${value.toFixed(1)}%`; }

async function refreshTrends() {
  const by = $("trend-by").value;
  const limit = $("trend-range").value;
  const text = $("trend-match").value.trim();
  // "User agents holding" draws over the user agents' shares only: it is no value of
  // another key, and a line left from it would read as one.
  const byAgent = by === "user_agent";
  $("trend-match-group").hidden = !byAgent;
  if (by === "asn" && Object.keys(providers).length === 0) await refreshProviders();
  const points = await getJSON(`api/history?by=${by}&top=${TREND_TOP}&limit=${limit}`);
  let matched = null;
  $("trend-note").className = "";
  $("trend-note").textContent = "";
  if (text && byAgent) {
    try {
      matched = await getJSON(
        `api/history?by=user_agent&match=${encodeURIComponent(text)}&limit=${limit}`);
    } catch (error) {
      $("trend-note").className = "error";
      $("trend-note").textContent = error.message;
    }
  }
  drawTrends(by, points, byAgent ? text : "", matched);
}

function drawTrends(by, points, text, matched) {
  const latest = [...points].reverse().find((p) => p.counts);
  const names = latest ? Object.keys(latest.counts) : [];
  const stacked = by !== "services";
  const palette = DARK.matches ? LAYERS.dark : LAYERS.light;
  const colorOf = (i) => (names[i] === "unknown" ? palette[8] : names[i] === "other" ? palette[9]
    : palette[i % 8]);
  const shares = names.map((name) => points.map((p) => (p.counts
    ? percent(p.counts[name], p.reachable) : null)));
  const data = [points.map((p) => p.timestamp)];
  const series = [{}];
  const bands = [];
  let below = null;
  names.forEach((name, i) => {
    const own = shares[i];
    const top = stacked && below ? own.map((v, j) => (v == null ? null : v + below[j])) : own;
    const shown = (u, v, si, idx) => (idx == null ? "—" : fmtPercent(own[idx]));
    // Each layer is filled between its top and the layer below (a band), so that the
    // legend's swatch is filled too.
    series.push({ label: valueName(by, name), stroke: colorOf(i), width: stacked ? 1 : 2, value: shown,
                  fill: stacked ? `${colorOf(i)}cc` : undefined });
    if (stacked && i > 0) bands.push({ series: [i + 1, i] });
    data.push(top);
    below = top;
  });
  const matchedShare = matched ? matched.map((p) => ("matched" in p
    ? percent(p.matched, p.reachable) : null)) : null;
  if (matchedShare) {
    series.push({ label: `holding “${text}”`, stroke: DARK.matches ? "#e6edf3" : "#1b1f24",
                  width: 2.5, dash: [8, 5], value: (u, v) => fmtPercent(v) });
    data.push(matchedShare);
  }
  const css = getComputedStyle(document.documentElement);
  const axis = { stroke: css.getPropertyValue("--fg").trim(),
                 grid: { stroke: css.getPropertyValue("--grid").trim() },
                 ticks: { stroke: css.getPropertyValue("--grid").trim() } };
  const width = $("trend-chart").clientWidth || 600;
  if (trendChart) trendChart.destroy();
  series[0] = { label: "time (UTC)" };
  trendChart = new uPlot({
    width, height: 320, series, bands, tzDate: UTC,
    axes: [axis, { ...axis, size: 60, values: (u, ticks) => ticks.map((t) => `${t}%`) }],
    scales: { x: { time: true }, y: { range: [0, 100] } },
  }, data, $("trend-chart"));
  const chart = $("trend-chart");
  chart.setAttribute("aria-label", describeTrends(by, points, latest, text, matched));
  chart.dataset.layers = names.join("|");
  chart.dataset.labels = names.map((name) => valueName(by, name)).join("|");
  chart.dataset.points = String(points.length);
  const last = matched ? [...matched].reverse().find((p) => "matched" in p) : null;
  chart.dataset.matched = last ? String(last.matched) : "";
  chart.dataset.scheme = DARK.matches ? "dark" : "light";
}

// The share chart's text alternative: what it plots, over when, and the latest crawl's
// shares (and the matched share).
function describeTrends(by, points, latest, text, matched) {
  const key = $("trend-by").selectedOptions[0].textContent.toLowerCase();
  if (!latest) return `Chart of the nodes' shares by ${key}: no crawl counted by ${key} yet`;
  const layers = Object.entries(latest.counts)
    .map(([name, n]) => `${valueName(by, name)} ${fmtPercent(percent(n, latest.reachable))}`).join(", ");
  let text_ = `Chart of the nodes' shares by ${key}, in UTC, over the last ` +
    `${plural(points.length, "crawl")}, ${fmtTime(points[0].timestamp)} to ` +
    `${fmtTime(points[points.length - 1].timestamp)}; latest: ${layers}`;
  const last = matched ? [...matched].reverse().find((p) => "matched" in p) : null;
  if (last) {
    text_ += `; user agents holding “${text}”: latest ` +
      `${fmtPercent(percent(last.matched, last.reachable))} ` +
      `(${fmtNumber(last.matched)} of ${fmtNumber(last.reachable)} nodes)`;
  }
  return text_;
}

async function refreshUnique() {
  for (const [window_, id] of UNIQUE) {
    const answer = await getJSON(`api/unique?window=${window_}`);
    const small = document.createElement("small");
    // A window longer than the crawls held counts only those: say how long that is.
    const held = answer.from == null ? 0 : answer.to - answer.from;
    const short = answer.crawls > 0 && held < window_ * 0.95 - 600;
    small.textContent = `in ${plural(answer.crawls, "crawl")}` +
      (short ? `: only ${fmtHeld(held + 600)} held` : "");
    $(id).replaceChildren(fmtNumber(answer.unique), small);
    $(id).dataset.unique = String(answer.unique);
    $(id).dataset.short = String(short);
  }
}

function fmtHeld(seconds) {
  const days = seconds / 86400;
  return days >= 1 ? `${days.toFixed(days < 10 ? 1 : 0)} days` : `${(seconds / 3600).toFixed(1)} h`;
}

function hidePresence() {
  $("presence-strip").hidden = $("presence-legend").hidden = $("presence-summary").hidden = true;
  $("check-latency").hidden = true;
}

// The check form: checks what is in the box, and keeps that address for re-checks.
function submitCheck(event) {
  event.preventDefault();
  check($("address").value.trim(), false).catch(report);
}

// Check an address: a new one from the form, or (again) the one shown, on a new crawl.
async function check(address, again) {
  const mine = ++checks;
  const result = $("check-result");
  if (!again) {
    $("check-page").hidden = true;
    $("check-presence").textContent = "";
    hidePresence();
    checked = null;
  }
  try {
    const answer = await getJSON(`api/check?address=${encodeURIComponent(address)}`);
    if (mine !== checks) return;  // a later check answers instead
    result.className = answer.reachable ? "found" : "missing";
    result.textContent = answer.reachable
      ? `${answer.address} is reachable (${answer.node.user_agent ?? "unknown agent"}, height ${answer.node.height}).`
      : `${answer.address} is not in the latest crawl. ${whyNot(answer.reason.detail)}`;
    result.dataset.reason = answer.reason.code;
    $("check-page").replaceChildren(nodeLink(answer.address, `The page of ${answer.address}`));
    $("check-page").hidden = false;
    const p = answer.presence;
    $("check-presence").textContent = p.seen === 0
      ? `Not seen in any of the ${p.crawls.toLocaleString()} crawls held.`
      : `Seen in ${p.seen.toLocaleString()} of ${p.crawls.toLocaleString()} crawls held; ` +
        `first seen ${fmtTime(p.first_seen)}, last seen ${fmtTime(p.last_seen)}.`;
    document.body.dataset.seen = `${p.seen}/${p.crawls}`;
    checked = answer.address;
    document.body.dataset.checked = checked;
    await showPresence(checked);
    await showLatency(checked);
  } catch (error) {
    if (mine !== checks) return;
    result.className = "error";
    result.textContent = error.message;
    if (!again) return;
    $("check-page").hidden = true;
    $("check-presence").textContent = "";  // the re-check failed: show nothing stale
    hidePresence();
  }
}

// The reason's sentence after "is not in the latest crawl.": without its own saying so.
function whyNot(detail) {
  const rest = detail.replace(/^Not in the newest export(, and |: )/, "");
  return rest.charAt(0).toUpperCase() + rest.slice(1);
}

function plural(n, word) { return `${n.toLocaleString()} ${word}${n === 1 ? "" : "s"}`; }

async function showPresence(address) {
  const mine = checks;
  const limit = $("range").value;
  const runs = await getJSON(`api/presence?address=${encodeURIComponent(address)}&limit=${limit}`);
  if (mine !== checks || address !== checked) return;  // another check began meanwhile
  const strip = $("presence-strip");
  const span = (run) => `${fmtTime(run.from)} to ${fmtTime(run.to)}`;
  strip.replaceChildren(...runs.map((run) => {
    const part = document.createElement("span");
    part.className = run.present ? "present" : "absent";
    part.style.flexGrow = String(run.crawls);
    part.title = `${run.present ? "in" : "not in"} ${plural(run.crawls, "crawl")}, ${span(run)}`;
    return part;
  }));
  const gaps = runs.filter((run) => !run.present);
  const present = runs.filter((run) => run.present).reduce((n, run) => n + run.crawls, 0);
  const total = runs.reduce((n, run) => n + run.crawls, 0);
  const range = `(${fmtTime(runs[0]?.from)} to ${fmtTime(runs[runs.length - 1]?.to)})`;
  const summary = total === 0 ? "" : present === 0
    ? `In none of the last ${plural(total, "crawl")} ${range}.`
    : `In ${present.toLocaleString()} of the last ${plural(total, "crawl")} ${range}` +
      (gaps.length === 0 ? ", with no gaps."
        : `; missing from ${plural(total - present, "crawl")} in ${plural(gaps.length, "gap")}.`);
  const latest = (present === 0 ? [] : gaps).slice(-3).reverse()
    .map((run) => `${span(run)} (${plural(run.crawls, "crawl")})`);
  const which = gaps.length === 1 ? "The gap" : gaps.length <= 3 ? "The gaps, latest first"
    : "The 3 latest gaps";
  strip.setAttribute("aria-label", `Presence of ${address}: ${summary}` +
    (latest.length ? ` ${which}: ${latest.join("; ")}.` : ""));
  $("presence-summary").textContent = summary;
  strip.dataset.runs = String(runs.length);
  strip.dataset.present = String(present);
  strip.hidden = $("presence-legend").hidden = $("presence-summary").hidden = runs.length === 0;
}

// The checked node's latency, when the bridge keeps it: the last day's mean round trip.
async function showLatency(address) {
  const line = $("check-latency");
  line.hidden = true;
  const [, host, port] = address.match(/^\[?(.*?)\]?:(\d+)$/) ?? [];
  if (!host) return;
  const segment = `${encodeURIComponent(host).replaceAll("%3A", ":")}-${port}`;
  // The node's page is marked by the server with whether a latency is kept: asking it
  // (always a 200) spares the 404 of /latency/ for the most nodes, which have none, and
  // that the browser would log as an error.
  const page = await fetch(`nodes/${segment}/`, { cache: "no-cache" });
  if (!page.ok || !(await page.text()).includes('data-latency="kept"')) return;
  if (address !== checked) return;
  const answer = await getJSON(`api/v1/nodes/${segment}/latency/`);
  if (address !== checked) return;
  const day = answer.daily_latency.filter((point) => point.v > 0);
  const silent = answer.daily_latency.filter((point) => point.v === -1).length;
  if (day.length === 0 && silent === 0) return;
  const mean = day.reduce((sum, point) => sum + point.v, 0) / (day.length || 1);
  line.textContent = day.length === 0 ? "No round-trip time in the last day." :
    `Latency over the last day: ${Math.round(mean)} ms on average, ${day[day.length - 1].v} ms last` +
    (silent ? `; no answer in ${plural(silent, "10-minute period")}.` : ".");
  line.hidden = false;
}

function listen() {
  const source = new EventSource("api/events");
  let shown = null;  // the snapshot shown, so that a reconnection does not announce it again
  source.addEventListener("open", () => { $("live").textContent = "live"; });
  source.addEventListener("error", () => { $("live").textContent = "reconnecting…"; });
  source.addEventListener("status", (event) => showStatus(JSON.parse(event.data)));
  source.addEventListener("snapshot", (event) => {
    const snapshot = JSON.parse(event.data);
    if (shown != null && snapshot.timestamp !== shown) {
      $("live").textContent = `live: a new crawl, ${fmtNumber(snapshot.total_nodes)} nodes, ` +
        `at ${fmtTime(snapshot.timestamp)}`;
    }
    shown = snapshot.timestamp;
    refreshChart().catch(report);
    refreshUnique().catch(report);
    refreshHeadline().catch(report);
    refreshProviders().then(() => Promise.all([refreshBreakdowns(), refreshTrends()])).catch(report);
    refreshChurn().catch(report);
    if (checked) check(checked, true).catch(report);
    // map.js and propagation.js load after this file, before any answer can come.
    if (typeof refreshPropagation === "function") refreshPropagation().catch(report);
    if (typeof refreshMap === "function") refreshMap().catch(report);
    if (document.body.dataset.status === "") refreshStatus().catch(report);  // the first crawl
  });
}

// The network switcher: every network the service serves, from api/networks at the
// service's root, linked as root + its path; hidden while there is only one.
const NETWORK_PAGE = /(^|\/)n\/[^/]+\/$/;  // the tail of a network's page: n/NAME/

function serviceRoot() {
  const folder = location.pathname.slice(0, location.pathname.lastIndexOf("/") + 1);
  return folder.replace(NETWORK_PAGE, "$1");
}

async function refreshNetworks() {
  const root = serviceRoot();
  let answer;
  try {
    answer = await getJSON(`${root}api/networks`);
  } catch (error) {
    if (error.status === 404) return;  // a crawldash that serves one network knows no list
    throw error;
  }
  const networks = answer.networks;
  const here = location.pathname.slice(root.length);
  const current = networks.find((n) => here.startsWith(n.path)) ?? networks[0];
  const items = networks.map((network) => {
    const item = document.createElement("li");
    const link = document.createElement("a");
    link.href = root + network.path;
    link.textContent = network.name;
    link.dataset.network = network.name;
    const detail = document.createElement("small");
    detail.textContent = network.nodes == null ? "no crawl yet"
      : `${fmtNumber(network.nodes)} nodes${network.stale ? ", stale" : ""}`;
    if (network.stale || network.nodes == null) detail.className = "stale";
    link.append(" ", detail);
    if (network === current) link.setAttribute("aria-current", "page");
    item.append(link);
    return item;
  });
  $("network-list").replaceChildren(...items);
  $("networks").hidden = networks.length < 2;
  document.body.dataset.networks = String(networks.length);
  if (current && networks.length > 1) {
    document.title = `crawldash: ${current.name}`;
    document.body.dataset.network = current.name;
  }
}

function report(error) { $("live").textContent = `error: ${error.message}`; }

$("check-form").addEventListener("submit", submitCheck);
$("search-form").addEventListener("submit", (event) => search(event).catch(report));
$("range").addEventListener("change", () => {
  refreshChart().catch(report);
  if (checked) showPresence(checked).catch(report);
});
$("split").addEventListener("change", () => refreshChart().catch(report));
DARK.addEventListener("change", () => {  // the charts' colours
  refreshChart().catch(report);
  refreshTrends().catch(report);
});
$("trend-controls").addEventListener("submit", (event) => {
  event.preventDefault();
  refreshTrends().catch(report);
});
for (const id of ["trend-by", "trend-range"]) {
  $(id).addEventListener("change", () => refreshTrends().catch(report));
}
window.addEventListener("resize", () => {
  if (chart) chart.setSize({ width: $("chart").clientWidth, height: 320 });
  if (trendChart) trendChart.setSize({ width: $("trend-chart").clientWidth, height: 320 });
});
// The rest is drawn on the event stream's first "snapshot" event, which it sends at once
// when a crawl is served: with none yet, the answers about a crawl would all be 503s.
refreshStatus().catch(report);
refreshNetworks().catch(report);
listen();
setInterval(() => {  // the ages tick between crawls
  refreshStatus().catch(report);
  refreshNetworks().catch(report);
}, 30000);
