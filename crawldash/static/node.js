"use strict";
// crawldash's page of one node, at nodes/<address>-<port>/: its state and the reason for it
// (/api/check), its runs of presence (/api/presence), its latency when the bitnodes bridge
// keeps it (/api/v1/nodes/<address>-<port>/latency/) and what the crawls said of it, and
// when that changed (/api/profile). Updates on each new crawl from /api/events.
// Every URL is relative to the page's folder (two levels below the network's root), so
// that the page works at /nodes/..., at /n/NAME/nodes/... and behind a proxy at a sub-path.
const ROOT = "../../";
const $ = (id) => document.getElementById(id);
const DARK = window.matchMedia("(prefers-color-scheme: dark)");
// The reason codes of docs/api.md ("Why a node is DOWN"), as a few words before the
// reason's own sentence (its detail, which says the rest): none for up, the badge says it.
const REASONS = {
  up: "",
  reached_not_held: "Reached, not held.",
  failed: "No handshake.",
  excluded: "Excluded by a rule.",
  not_tried: "Not tried.",
  unknown: "Why is unknown.",
};
// The service bits a node advertises, by name (crawl/breakdown.py's SERVICE_BITS).
const SERVICE_BITS = {
  0: "NODE_NETWORK", 1: "NODE_GETUTXO", 2: "NODE_BLOOM", 3: "NODE_WITNESS", 4: "NODE_XTHIN",
  6: "NODE_COMPACT_FILTERS", 10: "NODE_NETWORK_LIMITED", 11: "NODE_P2P_V2",
};
const UPTIME = [[144, "uptime-day"], [1008, "uptime-week"], [4320, "uptime-month"]];
const INDEX_NAMES = {
  vi: "VI, protocol version", si: "SI, services", hi: "HI, height", ai: "AI, ASN",
  pi: "PI, port", dli: "DLI, latency over a day", dui: "DUI, uptime over a day",
  wli: "WLI, latency over a week", wui: "WUI, uptime over a week",
  mli: "MLI, latency over 30 days", mui: "MUI, uptime over 30 days",
  nsi: "NSI, network speed (not measured)", ni: "NI, addresses (not measured)",
  bi: "BI, blocks (not measured)",
};
const VIEWS = {  // /latency/'s views: words, and the length of one point
  daily: ["day", "10-minute period"], weekly: ["week", "hour"], monthly: ["30 days", "6-hour period"],
};
const FIELDS = {  // /api/profile's fields, in words
  user_agent: "user agent", protocol_version: "protocol version", services: "services",
  country: "country", asn: "provider (ASN)", height: "height",
};
let address = null;  // the node as the API spells it, once checked
let latencyChart = null;

// Times in UTC, to the minute: one form for every time on the page.
function fmtTime(seconds) {
  if (seconds == null) return "—";
  return `${new Date(seconds * 1000).toISOString().slice(0, 16).replace("T", " ")} UTC`;
}
function fmtDay(seconds) { return new Date(seconds * 1000).toISOString().slice(0, 10); }
function fmtNumber(n) { return n == null ? "—" : n.toLocaleString(); }
// A duration as days, hours and minutes: "26 d 4 h", "3 h 12 min".
function fmtSpan(seconds) {
  const minutes = Math.max(0, Math.floor(seconds / 60));
  const [d, h, m] = [Math.floor(minutes / 1440), Math.floor(minutes / 60) % 24, minutes % 60];
  return d ? `${d} d ${h} h` : h ? `${h} h ${m} min` : `${m} min`;
}
function serviceNames(services) {
  const names = [];
  for (let bit = 0; bit < 64; bit++) {
    if ((BigInt(services) >> BigInt(bit)) & 1n) names.push(SERVICE_BITS[bit] ?? `BIT_${bit}`);
  }
  return names;
}
function plural(n, word) { return `${n.toLocaleString()} ${word}${n === 1 ? "" : "s"}`; }

// The node of the page's path, as /api/check takes it: bitnodes' <address>-<port>, the
// port after the last "-", IPv6 without brackets.
function addressOfPath() {
  const found = location.pathname.match(/\/nodes\/([^/]+)\/$/);
  if (!found) return null;
  const segment = decodeURIComponent(found[1]);
  const dash = segment.lastIndexOf("-");
  if (dash < 1) return null;
  const host = segment.slice(0, dash);
  const bracketed = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  return `${bracketed}:${segment.slice(dash + 1)}`;
}

// The path segment of an address as the API spells it: [2001:db8::1]:8333 -> 2001:db8::1-8333.
function segmentOf(spelled) {
  const [, host, port] = spelled.match(/^\[?(.*?)\]?:(\d+)$/);
  return `${host}-${port}`;
}

function showError(message) {
  $("node-error").textContent = message;
  $("node-error").hidden = false;
}

async function refresh() {
  const wanted = address ?? addressOfPath();
  if (wanted == null) throw new Error("this page's address is not <address>-<port>");
  const answer = await getJSON(`${ROOT}api/check?address=${encodeURIComponent(wanted)}`);
  address = answer.address;
  $("node-title").textContent = address;
  document.title = `${address}: crawldash`;
  showCheck(answer);
  await Promise.all([showPresence(), showUptime(), showChanges(), showLatency(), showRank(answer)]);
  document.body.dataset.shown = String(answer.snapshot_timestamp);
}

function showCheck(answer) {
  const state = $("node-state");
  state.textContent = answer.reachable ? "UP" : "DOWN";
  state.className = `state ${answer.reachable ? "up" : "down"}`;
  const reason = answer.reason;
  $("reason-code").textContent = REASONS[reason.code] ?? `${reason.code.replaceAll("_", " ")}.`;
  $("reason-code").dataset.code = reason.code;
  $("reason-detail").textContent = reason.detail;
  $("reason-crawl").textContent = (reason.crawl == null ? "No crawl is known for the reason."
    : `The reason comes from the crawl of ${fmtTime(reason.crawl)}.`) +
    (answer.last_up == null ? " Not in any crawl held."
      : answer.reachable ? "" : ` Last up in the crawl of ${fmtTime(answer.last_up)}.`);
  const p = answer.presence;
  $("presence-count").textContent = p.seen === 0
    ? `Up in none of the ${plural(p.crawls, "crawl")} held.`
    : `Up in ${p.seen.toLocaleString()} of ${plural(p.crawls, "crawl")} held; ` +
      `first ${fmtTime(p.first_seen)}, last ${fmtTime(p.last_seen)}.`;
  const node = answer.node;
  $("node-absent").hidden = node != null;
  $("node-absent").textContent = "Not in the newest crawl: its values are not known now.";
  const place = node ? [node.city, node.country].filter(Boolean).join(", ") : "";
  const since = node?.connected_since;
  const values = {
    user_agent: node?.user_agent, protocol_version: node?.protocol_version?.toString(),
    services: node?.services, height: node?.height, location: place || null,
    provider: node?.asn ? [node.asn, node.org].filter(Boolean).join(" ") : null,
    hostname: node?.hostname, timezone: node?.timezone,
    connected_since: since ? `${fmtTime(since)}: up ${fmtSpan(answer.snapshot_timestamp - since)}` : null,
  };
  for (const [key, value] of Object.entries(values)) {
    $(`value-${key}`).textContent = typeof value === "number" ? fmtNumber(value) : value ?? "—";
  }
  if (node && node.services != null) {
    const names = serviceNames(node.services);
    $("value-services").textContent = `${node.services} (0x${node.services.toString(16)})` +
      (names.length ? `: ${names.join(", ")}` : "");
  }
}

// Uptime over a day, a week and 30 days: the share of the last 144, 1,008 and 4,320 crawls
// held that had the node (the DUI, WUI and MUI of the leaderboard).
async function showUptime() {
  for (const [limit, id] of UPTIME) {
    const runs = await getJSON(`${ROOT}api/presence?address=${encodeURIComponent(address)}&limit=${limit}`);
    const total = runs.reduce((n, run) => n + run.crawls, 0);
    const up = runs.filter((run) => run.present).reduce((n, run) => n + run.crawls, 0);
    const small = document.createElement("small");
    small.textContent = total === 0 ? "no crawl held" : `in ${up.toLocaleString()} of ${plural(total, "crawl")}`;
    $(id).replaceChildren(total === 0 ? "—" : `${(100 * up / total).toFixed(1)}%`, small);
    $(id).dataset.up = `${up}/${total}`;
  }
}

// Its PIX and rank, for a node the leaderboard ranks (reachable, IPv4 or IPv6): asked for
// by q, which answers 200 for any node, so that a node not ranked logs no 404.
async function showRank(answer) {
  const table = $("rank-indexes");
  const ranked = answer.reachable && !/\.onion:|\.i2p:|^\[fc/i.test(answer.address);
  let row = null;
  if (ranked) {
    const page = await getJSON(`${ROOT}api/v1/nodes/leaderboard/?limit=100&q=${encodeURIComponent(answer.address)}`);
    row = page.results.find((each) => each.node === answer.address) ?? null;
    if (row) {
      const all = await getJSON(`${ROOT}api/v1/nodes/leaderboard/?limit=1`);
      $("rank-note").replaceChildren(`PIX ${row.peer_index}, rank ${row.rank.toLocaleString()} ` +
        `among ${plural(all.count, "node")} of the crawl of ${fmtTime(page.timestamp)}, on the `,
        Object.assign(document.createElement("a"), { href: `../leaderboard/?q=${encodeURIComponent(answer.address)}`, textContent: "leaderboard" }), ".");
    }
  }
  if (!row) {
    $("rank-note").textContent = ranked ? "Not on the leaderboard of the newest crawl yet."
      : "Not ranked: the leaderboard ranks the reachable IPv4 and IPv6 nodes of the newest crawl.";
  }
  table.hidden = row == null;
  document.body.dataset.rank = row ? String(row.rank) : "";
  if (!row) return;
  table.querySelector("tbody").replaceChildren(...Object.entries(INDEX_NAMES).map(([key, name]) => {
    const tr = document.createElement("tr");
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = name;
    const td = document.createElement("td");
    td.className = "n";
    td.textContent = row[key];
    tr.append(th, td);
    tr.dataset.index = key;
    return tr;
  }));
}

async function showPresence() {
  const limit = $("presence-range").value;
  const runs = await getJSON(`${ROOT}api/presence?address=${encodeURIComponent(address)}&limit=${limit}`);
  const bar = $("runs-bar");
  const words = (run) => `${run.present ? "Up" : "Down"} in ${plural(run.crawls, "crawl")}, ` +
    (run.from === run.to ? fmtTime(run.from) : `${fmtTime(run.from)} to ${fmtTime(run.to)}`);
  bar.replaceChildren(...runs.map((run) => {
    const part = document.createElement("span");
    part.className = run.present ? "present" : "absent";
    part.style.flexGrow = String(run.crawls);
    part.title = words(run);
    return part;
  }));
  // Newest first in the list: the latest runs are what a reader wants first.
  $("runs").replaceChildren(...[...runs].reverse().map((run) => {
    const item = document.createElement("li");
    item.className = run.present ? "up" : "down";
    item.textContent = words(run);
    return item;
  }));
  const up = runs.filter((run) => run.present).reduce((n, run) => n + run.crawls, 0);
  const total = runs.reduce((n, run) => n + run.crawls, 0);
  bar.setAttribute("aria-label", total === 0 ? "No crawl held yet"
    : `Up in ${up.toLocaleString()} of the last ${plural(total, "crawl")}, in ` +
      `${plural(runs.length, "run")} of up and down`);
  bar.hidden = runs.length === 0;
  bar.dataset.runs = String(runs.length);
}

// A change the crawls saw, as words before its date: "upgraded from /Satoshi:27.0.0/ to
// /Satoshi:28.0.0/" (then "on 2026-10-02"), "protocol version changed from 70016 to 70017".
function describeChange(change) {
  const from = change.from ?? "none";
  const to = change.to ?? "none";
  if (change.field !== "user_agent") {
    return `${FIELDS[change.field] ?? change.field} changed from ${from} to ${to}`;
  }
  const older = versionOf(change.from);
  const newer = versionOf(change.to);
  const order = older && newer && older.name === newer.name ? compare(newer.parts, older.parts) : 0;
  const verb = order > 0 ? "upgraded" : order < 0 ? "downgraded" : "changed its user agent";
  return `${verb} from ${from} to ${to}`;
}

// "/Satoshi:28.0.0/" -> {name: "Satoshi", parts: [28, 0, 0]}; null for another form.
function versionOf(agent) {
  const found = typeof agent === "string" ? agent.match(/^\/([^:/]+):(\d+(?:\.\d+)*)/) : null;
  return found ? { name: found[1], parts: found[2].split(".").map(Number) } : null;
}
function compare(a, b) {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) - (b[i] ?? 0);
  }
  return 0;
}

async function showChanges() {
  const profile = await getJSON(`${ROOT}api/profile?address=${encodeURIComponent(address)}`);
  $("changes").replaceChildren(...profile.changes.map((change) => {
    const item = document.createElement("li");
    const words = describeChange(change);
    const time = document.createElement("time");
    time.dateTime = new Date(change.crawl * 1000).toISOString();
    time.title = fmtTime(change.crawl);
    time.textContent = fmtDay(change.crawl);
    item.append(`${words.charAt(0).toUpperCase()}${words.slice(1)} on `, time, ".");
    item.dataset.field = change.field;
    return item;
  }));
  $("changes-note").textContent = profile.since == null
    ? "Nothing compared yet: changes are seen from the second crawl served since crawldash started."
    : profile.changes.length === 0
      ? `No change seen since the crawl of ${fmtTime(profile.since)}.`
      : `Since the crawl of ${fmtTime(profile.since)}, newest first:`;
}

// The latency, asked for only where the page is marked as having one kept (the server
// marks it): a 404 would be logged as an error in the browser's console.
async function showLatency() {
  const note = $("latency-note");
  const chart = $("latency-chart");
  if (document.body.dataset.latency !== "kept") {
    note.textContent = "No latency of this node is kept: the bitnodes bridge has recorded " +
      "no round-trip time of it, or crawldash is not given its folder.";
    chart.hidden = true;
    return;
  }
  $("latency-controls").hidden = false;
  const view = $("latency-range").value;
  const [span, point] = VIEWS[view];
  const answer = await getJSON(`${ROOT}api/v1/nodes/${segmentOf(address)}/latency/`);
  const points = answer[`${view}_latency`];
  const times = points.map((each) => each.t);
  const values = points.map((each) => (each.v > 0 ? each.v : null));  // -1, 0: no time
  const timed = values.filter((v) => v != null);
  const silent = points.filter((each) => each.v === -1).length;
  note.textContent = timed.length === 0 ? `No round-trip time in the last ${span}.`
    : `Round-trip time over the last ${span}: ${Math.round(timed.reduce((a, b) => a + b, 0) / timed.length)} ms ` +
      `on average, ${timed[timed.length - 1]} ms last` +
      (silent ? `; no answer in ${plural(silent, point)}.` : ".");
  chart.hidden = false;
  chart.dataset.view = view;
  chart.setAttribute("aria-label", `Chart of the round-trip time over the last ${span}, in UTC. ${note.textContent}`);
  drawLatency(times, values);
}

function drawLatency(times, values) {
  const css = getComputedStyle(document.documentElement);
  const fg = css.getPropertyValue("--fg").trim();
  const grid = css.getPropertyValue("--grid").trim();
  const axis = { stroke: fg, grid: { stroke: grid }, ticks: { stroke: grid } };
  const chart = $("latency-chart");
  if (latencyChart) latencyChart.destroy();
  latencyChart = new uPlot({
    width: chart.clientWidth || 600, height: 240,
    series: [{}, { label: "ms", stroke: css.getPropertyValue("--accent").trim(), width: 2 }],
    axes: [axis, { ...axis, size: 50 }], scales: { x: { time: true } },
  }, [times, values], chart);
  chart.dataset.scheme = DARK.matches ? "dark" : "light";
}

function listen() {
  const source = new EventSource(`${ROOT}api/events`);
  let shown = null;
  source.addEventListener("open", () => { $("live").textContent = "live"; });
  source.addEventListener("error", () => { $("live").textContent = "reconnecting…"; });
  source.addEventListener("snapshot", (event) => {
    const timestamp = JSON.parse(event.data).timestamp;
    if (shown != null && timestamp !== shown) {
      $("live").textContent = `live: a new crawl, at ${fmtTime(timestamp)}`;
      refresh().catch(report);
    }
    shown = timestamp;
  });
}

function report(error) { showError(error.message); }

$("presence-controls").addEventListener("submit", (event) => event.preventDefault());
$("presence-range").addEventListener("change", () => showPresence().catch(report));
$("latency-controls").addEventListener("submit", (event) => event.preventDefault());
$("latency-range").addEventListener("change", () => showLatency().catch(report));
DARK.addEventListener("change", () => showLatency().catch(report));  // the chart's colours
window.addEventListener("resize", () => {
  if (latencyChart) latencyChart.setSize({ width: $("latency-chart").clientWidth, height: 240 });
});
refresh().then(listen, report);
