/// The `/ui/` page: downloads (progress, pause, resume, remove, add), the
/// cache's use and live counters from `/stats`. One self-contained document
/// served from the binary: no build step, no external request.
enum DownloadsPage {
    static func html(token: String) -> String {
        template.replacing("__TOKEN__", with: token.filter { $0.isHexDigit })
    }

    /// `GET /`'s body: where the page is (`pagePath`, one of two fixed paths).
    static func rootHTML(pagePath: String) -> String {
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>HTTPCache</title></head><body>\n"
            + "<p>HTTPCache: the downloads and cache page is at <a href=\"\(pagePath)\">\(pagePath)</a>.</p>\n"
            + "<p>Proxy URLs look like /p/&lt;encoded origin&gt;/&lt;name&gt;.</p>\n</body></html>\n"
    }

    private static let template = #"""
<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>HTTPCache</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<style>
body{font:14px system-ui,sans-serif;margin:0 auto;max-width:980px;padding:1em;color:#222;background:#fafafa}
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.5em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;width:100%}td,th{padding:4px 6px;text-align:left;border-bottom:1px solid #eee;vertical-align:middle}
.bar{background:#e4e4e4;border-radius:3px;height:10px;width:180px;overflow:hidden}.bar>div{background:#2a7;height:100%}
.failed .bar>div{background:#c33}.paused .bar>div{background:#999}
button{font:inherit;padding:2px 8px;margin-right:4px}form input{font:inherit;margin-right:6px}
.err{color:#b00}.hint{color:#666;font-size:.9em;margin:.4em 0}.num{font-variant-numeric:tabular-nums}canvas{border:1px solid #ddd;background:#fff}
</style></head><body>
<h1>HTTPCache</h1>
<h2>Downloads</h2>
<form id="add"><input id="url" name="url" placeholder="https://… (MP4, HLS, DASH)" size="46" required aria-label="URL to download">
<input id="name" name="name" placeholder="name" size="12" aria-label="name" title="The title's name in the list; the URL's last path segment if empty.">
<input id="variant" name="variant" placeholder="variant" size="7" aria-label="variant" title="HLS and DASH: which renditions to download: all (the default), highest, lowest, or a bandwidth in bits per second (the closest one).">
<input id="duration" name="duration" placeholder="seconds" size="6" aria-label="seconds" title="HLS and DASH: download only the first this many seconds of each rendition; empty: all of it."><button id="addButton" type="submit">Add</button>
<span id="addError" class="err"></span>
<p id="addHelp" class="hint"><b>variant</b> (HLS, DASH): which renditions to download: <code>all</code> (the default), <code>highest</code>, <code>lowest</code>, or a bandwidth in bits per second (the closest rendition).<br>
<b>seconds</b> (HLS, DASH): download only the first this many seconds of each rendition; empty: all of it.</p></form>
<table><thead><tr><th>Name</th><th>State</th><th>Progress</th><th></th><th></th></tr></thead><tbody id="downloads"></tbody></table>
<p id="noDownloads" class="hint" hidden>No downloads yet. Add one with the form above, or run <code>httpcache download add URL</code>.</p>
<h2>Cache</h2>
<p id="cacheUse" class="num">…</p>
<table><thead><tr><th>Largest entries</th><th>Variant</th><th>Bytes</th><th>Pinned</th></tr></thead><tbody id="largest"></tbody></table>
<h2>Live</h2>
<p class="num">Hit ratio <b id="hitRatio">–</b> · from disk <b id="fromDisk">–</b> · from origin <b id="fromOrigin">–</b></p>
<canvas id="chart" width="600" height="120"></canvas>
<p style="color:#777">Bytes per second from disk (green) and from the origin (orange), over the last five minutes.</p>
<script>
"use strict";
const token = "__TOKEN__";
// The proxy's own routes sit beside the page: /ui/ or, in reverse mode, /_httpcache/ui/.
const base = location.pathname.replace(/\/ui\/?$/, "");
const downloads = new Map();
function size(n) {
  if (n === null || n === undefined) return "?";
  const units = ["B", "kB", "MB", "GB", "TB"]; let u = 0; let v = n;
  while (v >= 1000 && u < units.length - 1) { v /= 1000; u++; }
  return (u === 0 ? String(v) : v.toFixed(1)) + " " + units[u];
}
async function admin(method, path, params) {
  const query = params ? "?" + new URLSearchParams(params).toString() : "";
  const response = await fetch(base + path + query, {method, headers: {"X-HTTPCache-Token": token}});
  const body = await response.json();
  if (!response.ok) throw new Error(body.message || ("HTTP " + response.status));
  return body;
}
// Controls (C0, DEL, C1) shown as \xHH, never acted on.
function visible(text) { return String(text).replace(/[\u0000-\u001f\u007f-\u009f]/g, c => "\\x" + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")); }
function cell(row, text) { const td = document.createElement("td"); td.textContent = visible(text); row.appendChild(td); return td; }
// `question`: the button destroys something; it asks first.
function button(td, label, action, id, question) {
  const b = document.createElement("button"); b.textContent = label; b.dataset.action = action; b.dataset.id = id;
  b.addEventListener("click", () => {
    if (question && !confirm(question)) return;
    admin("POST", "/admin/downloads/" + action, {id}).then(update).catch(shown);
  });
  td.appendChild(b);
}
function shown(error) { document.getElementById("addError").textContent = String(error.message || error); }
function update(record) {
  if (record.state === "removed") downloads.delete(record.id); else downloads.set(record.id, record);
  render();
}
function render() {
  const body = document.getElementById("downloads");
  body.replaceChildren();
  for (const d of downloads.values()) {
    const row = document.createElement("tr"); row.className = d.state; row.dataset.id = d.id; row.dataset.done = d.bytesDone;
    cell(row, d.name).title = d.url;
    cell(row, d.state + (d.failure ? ": " + d.failure.message : ""));
    const total = d.bytesTotal;
    const fraction = total ? Math.min(1, d.bytesDone / total) : (d.resourcesTotal ? d.resourcesDone / d.resourcesTotal : 0);
    const td = cell(row, "");
    const bar = document.createElement("div"); bar.className = "bar";
    const fill = document.createElement("div"); fill.style.width = (fraction * 100).toFixed(1) + "%"; bar.appendChild(fill);
    td.appendChild(bar);
    const text = size(d.bytesDone) + " of " + (total ? (d.totalIsEstimate ? "~" : "") + size(total) : "?") +
      (d.segmentsTotal ? " · " + d.segmentsDone + "/" + d.segmentsTotal + " segments" : "");
    const info = cell(row, text); info.className = "num progress";
    const actions = cell(row, "");
    if (d.state === "running" || d.state === "queued") button(actions, "Pause", "pause", d.id);
    if (d.state === "paused" || d.state === "failed") button(actions, "Resume", "resume", d.id);
    button(actions, "Remove", "remove", d.id,
      "Remove the download \u201c" + visible(d.name) + "\u201d? It stops, and its files no other download uses are deleted from the cache.");
    body.appendChild(row);
  }
  document.getElementById("noDownloads").hidden = downloads.size > 0;
}
async function follow() {
  // Server-Sent Events read with fetch: EventSource cannot send the token header.
  for (;;) {
    try {
      const response = await fetch(base + "/admin/downloads/events", {headers: {"X-HTTPCache-Token": token}});
      const reader = response.body.getReader(); const decoder = new TextDecoder(); let buffer = "";
      for (;;) {
        const {value, done} = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, {stream: true});
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end); buffer = buffer.slice(end + 2);
          const data = block.split("\n").filter(l => l.startsWith("data: ")).map(l => l.slice(6)).join("\n");
          if (data) update(JSON.parse(data));
        }
      }
    } catch (e) { /* the proxy restarted: try again */ }
    await new Promise(r => setTimeout(r, 2000));
  }
}
async function cacheUse() {
  try {
    const listing = await admin("GET", "/admin/cache");
    const pinned = listing.entries.filter(e => e.isPinned).reduce((s, e) => s + e.cachedBytes, 0);
    const titles = [...downloads.values()].map(d => visible(d.name) + " " + size(d.bytesDone)).join(", ");
    document.getElementById("cacheUse").textContent = size(listing.totalBytes) + " of " + size(listing.maxBytes) +
      " · " + listing.entries.length + (listing.entries.length === 1 ? " entry" : " entries") + " · pinned " + size(pinned) + (titles ? " · titles: " + titles : "");
    const body = document.getElementById("largest"); body.replaceChildren();
    for (const e of [...listing.entries].sort((a, b) => b.cachedBytes - a.cachedBytes).slice(0, 10)) {
      const row = document.createElement("tr"); cell(row, e.url); cell(row, e.variant || "primary");
      cell(row, size(e.cachedBytes)).className = "num";
      cell(row, e.isPinned ? "yes" : ""); body.appendChild(row);
    }
  } catch (e) { document.getElementById("cacheUse").textContent = String(e.message || e); }
}
const samples = [];
async function stats() {
  try {
    const s = await (await fetch(base + "/stats")).json();
    document.getElementById("hitRatio").textContent = (s.hit_ratio * 100).toFixed(1) + "%";
    document.getElementById("fromDisk").textContent = size(s.bytes_from_cache);
    document.getElementById("fromOrigin").textContent = size(s.bytes_from_origin);
    samples.push({t: Date.now(), disk: s.bytes_from_cache, origin: s.bytes_from_origin});
    while (samples.length > 151) samples.shift();
    draw();
  } catch (e) { /* next time */ }
}
function draw() {
  const c = document.getElementById("chart"); const g = c.getContext("2d");
  g.clearRect(0, 0, c.width, c.height);
  const rates = [];
  for (let i = 1; i < samples.length; i++) {
    const dt = Math.max(0.001, (samples[i].t - samples[i - 1].t) / 1000);
    rates.push({disk: (samples[i].disk - samples[i - 1].disk) / dt, origin: (samples[i].origin - samples[i - 1].origin) / dt});
  }
  const top = Math.max(1, ...rates.map(r => Math.max(r.disk, r.origin)));
  for (const [key, color] of [["disk", "#2a7"], ["origin", "#e80"]]) {
    g.strokeStyle = color; g.beginPath();
    rates.forEach((r, i) => { const x = c.width - (rates.length - i) * 4; const y = c.height - 4 - (r[key] / top) * (c.height - 8);
      if (i === 0) g.moveTo(x, y); else g.lineTo(x, y); });
    g.stroke();
  }
}
document.getElementById("add").addEventListener("submit", event => {
  event.preventDefault();
  const params = {url: document.getElementById("url").value};
  for (const key of ["name", "variant", "duration"]) { const v = document.getElementById(key).value; if (v) params[key] = v; }
  admin("POST", "/admin/downloads/add", params).then(r => { shown(""); update(r); }).catch(shown);
});
admin("GET", "/admin/downloads").then(list => { for (const d of list.downloads) update(d); render(); }).catch(shown);
follow(); cacheUse(); stats();
setInterval(stats, 2000); setInterval(cacheUse, 10000);
</script></body></html>
"""#
}
