"use strict";
// The check form: a node's presence over the chart's range from /api/presence, why it is
// not in the latest crawl when it is not, and its latency when the bridge keeps it.
// The address whose check is shown, as the API spelled it: a new crawl or another range
// re-checks it, whatever has since been typed in the box.
let checked = null;
let checks = 0;  // counts checks begun, so that only the latest one's answer is shown

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
