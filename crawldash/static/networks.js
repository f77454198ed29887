"use strict";
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
