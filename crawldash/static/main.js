"use strict";
// Loaded last, once every script of the page has defined what it draws: the controls
// wired, the first answers asked for, and the event stream followed, each crawl served
// redrawing what is about it.
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
    refreshPropagation().catch(report);
    refreshMap().catch(report);
    if (document.body.dataset.status === "") refreshStatus().catch(report);  // the first crawl
  });
}

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
