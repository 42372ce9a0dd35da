// The HTML report (see html_report.h). Everything from the profile goes through htmlEscape or
// jsonForScript; a Content-Security-Policy with a nonce lets only this file's own script run, and
// forbids any network fetch, so a hostile kernel name can neither run code nor phone home.
#include "fprof/reports/html_report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <iterator>
#include <random>
#include <vector>

#include "fprof/reports/escape.h"
#include "fprof/reports/format.h"
#include "palette.h"

namespace fprof::reports {
namespace {

std::string randomNonce() {
  std::random_device rd;
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string n;
  for (int i = 0; i < 24; ++i) n += kAlphabet[rd() % (sizeof kAlphabet - 1)];
  return n;
}

// Every text shown: cut to the display limit and escaped.
std::string e(std::string_view s) { return htmlEscapeShown(s); }

// A table cell: the shown text, and a sort key when there is a number behind it.
std::string numCell(const std::string& text, std::optional<double> key) {
  if (!key || !std::isfinite(*key)) return "<td class=\"num na\">" + e(text) + "</td>";
  return fmt::format("<td class=\"num\" data-v=\"{:.6g}\">{}</td>", *key, e(text));
}

std::string optCell(const std::optional<double>& v, std::string (*format)(double)) {
  return numCell(orNa(v, format), v);
}

// A cell of a column shown only with "all columns": numCell's or optCell's, marked.
std::string moreCell(std::string td) {
  const size_t at = td.find("class=\"");
  if (at != std::string::npos) td.insert(at + 7, "more ");
  return td;
}

// A section's heading line: the title, its controls, and what the section shows and where its
// numbers come from folded into "about" (open to read), so that the first screen holds the data.
std::string sectionHead(const std::string& id, const std::string& title, const std::string& controls_html,
                        const std::string& about_html) {
  std::string s = "<div class=\"head\"><h2 id=\"" + id + "\">" + title + "</h2>" + controls_html;
  if (!about_html.empty()) {
    s += "<details class=\"about\"><summary>about</summary><div class=\"about-text\">" + about_html + "</div></details>";
  }
  return s + "</div>\n";
}

// A kernel's short name, with the full demangled name on hover where they differ.
std::string titleAttr(const std::string& full, const std::string& shown) {
  return full == shown ? std::string() : " title=\"" + e(full) + "\"";
}
std::string nameCell(const std::string& full, const std::string& shown) {
  return "<td class=\"name\"" + titleAttr(full, shown) + ">" + e(shown) + "</td>";
}

const char* kStyle = R"CSS(
:root{--fg:#1d2330;--muted:#5b6475;--line:#d9dde5;--bg:#fff;--panel:#f6f7f9;--accent:#2f6fdf;--bad:#c0392b;--good:#1e8449}
*{box-sizing:border-box}
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--fg);background:var(--bg);margin:0 auto;max-width:1400px;padding:12px 24px 60px}
h1{font-size:20px;margin:0;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}h1 .muted{font-size:14px;font-weight:normal;font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace}
h2{font-size:16px;margin:16px 0 6px;border-bottom:1px solid var(--line);padding-bottom:3px}
h3{font-size:15px;margin:14px 0 6px}
code,.mono{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12.5px}
.muted{color:var(--muted)}.src{color:var(--muted);font-size:12px}
.summary{margin:2px 0 2px;color:var(--muted);font-size:13px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:8px 0}
.meta dt{color:var(--muted)}.meta dd{margin:0;word-break:break-all}
.first{display:grid;grid-template-columns:minmax(0,1fr) 560px;gap:22px;align-items:start}
.first .head{margin-top:4px}
.findings{background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:6px 12px 6px 30px;margin:0;overflow-wrap:anywhere}
.findings li{margin:3px 0}.findings code{font-size:12px}
.warn{color:var(--bad)}
table{border-collapse:collapse;width:100%;font-size:12.5px}
th,td{padding:3px 6px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{background:var(--panel);position:sticky;top:0;white-space:nowrap;z-index:1}
th.sortable{cursor:pointer;user-select:none}th.sortable:hover{color:var(--accent)}
th[aria-sort=ascending]::after{content:" \25B2";font-size:10px}th[aria-sort=descending]::after{content:" \25BC";font-size:10px}
td.num,th.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
td.na{color:#9aa1ad}
td.name{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12px;word-break:break-all;min-width:220px;max-width:420px}
td.op{max-width:170px;overflow-wrap:anywhere}td.pair{max-width:380px;overflow-wrap:anywhere}td.advice{max-width:420px;min-width:200px}td.risks{max-width:320px}
table:not(.all) .more{display:none}
tr.hl td{background:#fff5cc}
.tablewrap{max-height:640px;overflow:auto;border:1px solid var(--line);border-radius:6px}
.tablewrap.short{max-height:188px}
.head{display:flex;gap:12px;align-items:center;flex-wrap:wrap;font-size:12.5px;line-height:1.3;border-bottom:1px solid var(--line);margin:10px 0 4px;padding-bottom:2px;position:relative}
.head h2{border:0;margin:0;padding:0}
.head input[type=search]{font:inherit;padding:1px 8px;width:240px;border:1px solid var(--line);border-radius:4px}
.head label{color:var(--fg);white-space:nowrap}.head label input{margin:0 3px 0 0;vertical-align:-2px}
.about{color:var(--muted)}.about>summary{cursor:pointer;font-size:12px}
.about[open]>.about-text{position:absolute;left:0;right:0;top:100%;z-index:5;background:#fff;border:1px solid var(--line);border-radius:6px;padding:8px 12px;box-shadow:0 4px 14px rgba(0,0,0,.12);color:var(--fg);font-size:12.5px}
svg.roofline{width:100%;height:auto;background:#fff;border:1px solid var(--line);border-radius:6px;display:block}
svg .plot{fill:#fbfcfd;stroke:#c4c9d2}svg .grid{stroke:#e6e9ee}svg .tick{font-size:11px;fill:#5b6475}
svg .axis{font-size:12px;fill:#1d2330}
svg .roof{stroke-width:2.2}svg .roof-bw{stroke:#1d2330}svg .roof-l2{stroke:#5b6475;stroke-dasharray:7 4}
svg .roof-l1{stroke:#8d95a3;stroke-dasharray:2 4}svg .roof-compute{stroke:#b03a2e}
svg .roof-label{font-size:10.5px;fill:#1d2330;paint-order:stroke;stroke:#fff;stroke-width:3px}
svg .pt{fill-opacity:.78;stroke:#1d2330;stroke-width:.8;cursor:pointer}svg .pt:hover,svg .pt.hl{stroke-width:2.5;fill-opacity:1}
svg .pt-base{fill:none;stroke:#777;stroke-width:1.2}svg .arrow{stroke:#444;stroke-width:1.3}
svg .lvl{fill:none;stroke:#555;stroke-width:1}svg:not(.show-levels) .levels{display:none}
.controls{color:var(--muted)}.controls label{margin-left:8px}
.legend{display:flex;flex-wrap:wrap;gap:0 12px;font-size:12px;margin:3px 0;max-height:34px;overflow-y:auto}.legend[hidden]{display:none}
.legend .chip{white-space:nowrap;max-width:250px;overflow:hidden;text-overflow:ellipsis}
.chartbox{display:flex;gap:18px;align-items:flex-start;flex-wrap:wrap}.chartbox svg.roofline{width:920px;max-width:100%}
.chartbox .legend{display:block;max-height:none;min-width:220px;max-width:420px}.legend div{margin:2px 0;word-break:break-all}
.legend .sw{display:inline-block;width:10px;height:10px;border-radius:50%;margin-right:5px;vertical-align:-1px;border:1px solid #1d2330}
.nochart{background:var(--panel);border:1px dashed #aab;border-radius:6px;padding:4px 14px;font-size:13px}
.bars{display:grid;grid-template-columns:minmax(180px,420px) 1fr max-content;gap:3px 10px;align-items:center;font-size:13px}
.bars .label{overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.bars .bar{height:14px;border-radius:3px;min-width:1px}
.verdict{display:inline-block;padding:3px 10px;border-radius:4px;color:#fff;font-weight:600}
.verdict.pass{background:var(--good)}.verdict.fail{background:var(--bad)}
.reg{color:var(--bad);font-weight:600}.imp{color:var(--good)}
details{margin:14px 0}details>summary{cursor:pointer}details>summary h2{display:inline-block;border:0;margin:0 8px 0 0}
#tooltip{position:fixed;pointer-events:none;background:#1d2330;color:#fff;padding:6px 9px;border-radius:5px;font-size:12px;white-space:pre-wrap;max-width:520px;display:none;z-index:10}
footer{margin-top:36px;font-size:12px;color:var(--muted)}
#fprof-selftest{white-space:pre-wrap}
)CSS";

// Sorting, filtering, the chart tooltip and, with #selftest in the URL, a self-test whose verdict
// the browser test reads back from the DOM.
const char* kScript = R"JS(
(function () {
  'use strict';
  document.documentElement.setAttribute('data-fprof-script', 'ran');
  var data = JSON.parse(document.getElementById('fprof-data').textContent);

  function keyOf(row, col) {
    var td = row.cells[col];
    var v = td.getAttribute('data-v');
    return v === null ? null : parseFloat(v);
  }
  function sortTable(table, col, descending) {
    var th = table.tHead.rows[0].cells[col];
    var numeric = th.classList.contains('num');
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      if (numeric) {
        var x = keyOf(a, col), y = keyOf(b, col);
        if (x === null && y === null) return 0;
        if (x === null) return 1;  // n/a sorts last either way
        if (y === null) return -1;
        return descending ? y - x : x - y;
      }
      var s = a.cells[col].textContent, t = b.cells[col].textContent;
      return descending ? t.localeCompare(s) : s.localeCompare(t);
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) { c.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', descending ? 'descending' : 'ascending');
  }
  // A row's text, with the full kernel names its short names stand for.
  function rowText(r) {
    var text = r.textContent;
    Array.prototype.forEach.call(r.querySelectorAll('td.name[title]'), function (td) { text += '\n' + td.title; });
    return text.toLowerCase();
  }
  function filterTable(table, text) {
    var needle = text.toLowerCase();
    var shown = 0;
    Array.prototype.forEach.call(table.tBodies[0].rows, function (r) {
      var hit = needle === '' || rowText(r).indexOf(needle) >= 0;
      r.style.display = hit ? '' : 'none';
      if (hit) shown++;
    });
    var counter = document.getElementById(table.id + '-count');
    if (counter) counter.textContent = shown + ' of ' + table.tBodies[0].rows.length + ' rows';
    return shown;
  }
  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      if (!th.classList.contains('sortable')) return;
      th.addEventListener('click', function () {
        var numeric = th.classList.contains('num');
        var cur = th.getAttribute('aria-sort');
        sortTable(table, col, cur ? cur === 'ascending' : numeric);
      });
    });
  });
  var filter = document.getElementById('kernel-filter');
  var ktable = document.getElementById('kernel-table');
  if (filter && ktable) filter.addEventListener('input', function () { filterTable(ktable, filter.value); });

  // Hover on a point: a tooltip from the embedded data, and the table row highlighted.
  var tip = document.getElementById('tooltip');
  Array.prototype.forEach.call(document.querySelectorAll('svg .pt'), function (pt) {
    var g = data.groups[parseInt(pt.getAttribute('data-g'), 10)];
    var row = document.getElementById('g' + pt.getAttribute('data-g'));
    pt.addEventListener('mousemove', function (ev) {
      tip.textContent = g.tip;
      tip.style.display = 'block';
      tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - 540) + 'px';
      tip.style.top = (ev.clientY + 14) + 'px';
      if (row) row.classList.add('hl');
    });
    pt.addEventListener('mouseleave', function () { tip.style.display = 'none'; if (row) row.classList.remove('hl'); });
    pt.addEventListener('click', function () { if (row) row.scrollIntoView({block: 'center'}); });
  });
  var levels = document.getElementById('show-levels');
  var svg = document.getElementById('roofline');
  if (levels && svg) levels.addEventListener('change', function () { svg.classList.toggle('show-levels', levels.checked); });
  // The chart coloured by op or by fraction of roof; each point carries both colours.
  function colourBy(attr) {
    Array.prototype.forEach.call(document.querySelectorAll('svg .pt'), function (pt) { pt.setAttribute('fill', pt.getAttribute(attr)); });
    var byRoof = attr === 'data-roof-fill';
    var lo = document.getElementById('legend-op'), lr = document.getElementById('legend-roof');
    if (lo) lo.hidden = byRoof;
    if (lr) lr.hidden = !byRoof;
  }
  var cop = document.getElementById('colour-op'), croof = document.getElementById('colour-roof');
  if (cop) cop.addEventListener('change', function () { colourBy('data-op-fill'); });
  if (croof) croof.addEventListener('change', function () { colourBy('data-roof-fill'); });
  // Columns and rows beyond the first screen's, on demand.
  Array.prototype.forEach.call(document.querySelectorAll('input.all-cols'), function (box) {
    box.addEventListener('change', function () {
      var t = document.getElementById(box.getAttribute('data-table'));
      if (t) t.classList.toggle('all', box.checked);
    });
  });
  Array.prototype.forEach.call(document.querySelectorAll('input.all-rows'), function (box) {
    box.addEventListener('change', function () {
      var w = document.getElementById(box.getAttribute('data-wrap'));
      if (w) w.classList.toggle('short', !box.checked);
    });
  });

  // With #layout in the URL: where the answer sits in this window, for the browser test ("hidden"
  // for an element that takes no room).
  if (location.hash === '#layout') {
    var lines = ['viewport ' + window.innerWidth + ' ' + window.innerHeight];
    [['findings', '#findings'], ['roofline', '#roofline-h'], ['roof', '#kernel-table th[data-col=roof]'],
     ['bound', '#kernel-table th[data-col=bound]'], ['gain', '#kernel-table th[data-col=gain]'],
     ['payoff', '#fusion-table th[data-col=payoff]'], ['details', '#run-details'], ['page', 'body']
    ].forEach(function (item) {
      var el = document.querySelector(item[1]);
      if (!el) { lines.push(item[0] + ' none'); return; }
      var b = el.getBoundingClientRect();
      if (b.width === 0 || b.height === 0) { lines.push(item[0] + ' hidden'); return; }
      lines.push(item[0] + ' ' + [b.left, b.top, b.right, b.bottom].map(Math.round).join(' '));
    });
    lines.push('scroll-width ' + document.documentElement.scrollWidth);
    document.getElementById('fprof-layout').textContent = lines.join('\n');
    return;
  }

  if (location.hash !== '#selftest') return;
  var out = [];
  function check(name, ok) { out.push((ok ? 'ok   ' : 'FAIL ') + name); }
  function column(table, label) {
    var cells = table.tHead.rows[0].cells;
    for (var i = 0; i < cells.length; i++) if (cells[i].getAttribute('data-col') === label) return i;
    return -1;
  }
  function keys(table, col) {
    return Array.prototype.map.call(table.tBodies[0].rows, function (r) { return keyOf(r, col); });
  }
  function monotone(list, descending) {
    var seenNull = false;
    for (var i = 0; i < list.length; i++) {
      if (list[i] === null) { seenNull = true; continue; }
      if (seenNull) return false;  // a number after n/a
      if (i > 0 && list[i - 1] !== null && (descending ? list[i] > list[i - 1] : list[i] < list[i - 1])) return false;
    }
    return true;
  }
  if (ktable) {
    var rows = ktable.tBodies[0].rows.length;
    ['time', 'calls', 'mean', 'intensity', 'roof'].forEach(function (label) {
      var col = column(ktable, label);
      if (col < 0) { check('column ' + label + ' exists', false); return; }
      sortTable(ktable, col, false);
      check('sort ' + label + ' ascending', monotone(keys(ktable, col), false));
      sortTable(ktable, col, true);
      check('sort ' + label + ' descending', monotone(keys(ktable, col), true));
    });
    var kcol = column(ktable, 'kernel');
    sortTable(ktable, kcol, false);
    var names = Array.prototype.map.call(ktable.tBodies[0].rows, function (r) { return r.cells[kcol].textContent; });
    var sortedNames = names.slice().sort(function (a, b) { return a.localeCompare(b); });
    check('sort kernel by name', names.join('\n') === sortedNames.join('\n'));
    var tcol = column(ktable, 'time');
    sortTable(ktable, tcol, true);
    check('rows kept after sorting', ktable.tBodies[0].rows.length === rows);
    if (rows > 1) {
      var probe = ktable.tBodies[0].rows[rows - 1].cells[kcol].textContent;
      var shown = filterTable(ktable, probe);
      var allMatch = Array.prototype.every.call(ktable.tBodies[0].rows, function (r) {
        return r.style.display === 'none' || rowText(r).indexOf(probe.toLowerCase()) >= 0;
      });
      check('filter shows only matching rows', shown >= 1 && shown < rows && allMatch);
      check('filter cleared shows all rows', filterTable(ktable, '') === rows);
    }
  }
  var fusion = document.querySelectorAll('#fusion-table tbody tr.fuse');
  var payoffs = Array.prototype.map.call(fusion, function (r) { return parseFloat(r.getAttribute('data-payoff')); });
  check('fusion pairs in payoff order', monotone(payoffs, true));
  var rowsAll = document.querySelectorAll('#fusion-table tbody tr');
  var lastFuse = -1, firstNoFuse = rowsAll.length;
  Array.prototype.forEach.call(rowsAll, function (r, i) {
    if (r.classList.contains('fuse')) lastFuse = i; else if (firstNoFuse === rowsAll.length) firstNoFuse = i;
  });
  check('pairs not to fuse come last', lastFuse < firstNoFuse);
  // The chart by fraction of roof and back; the columns beyond the first screen's on demand.
  var pts = document.querySelectorAll('svg .pt');
  if (croof && pts.length) {
    croof.checked = true;
    croof.dispatchEvent(new Event('change'));
    check('chart coloured by % of roof', Array.prototype.every.call(pts, function (p) {
      return p.getAttribute('fill') === p.getAttribute('data-roof-fill');
    }) && !document.getElementById('legend-roof').hidden && document.getElementById('legend-op').hidden);
    cop.checked = true;
    cop.dispatchEvent(new Event('change'));
    check('chart coloured by op again', Array.prototype.every.call(pts, function (p) {
      return p.getAttribute('fill') === p.getAttribute('data-op-fill');
    }));
  }
  var allCols = document.querySelector('input.all-cols[data-table=kernel-table]');
  var regsHead = ktable ? ktable.querySelector('th[data-col=regs]') : null;
  if (allCols && regsHead) {
    var hiddenBefore = regsHead.getBoundingClientRect().width === 0;
    allCols.checked = true;
    allCols.dispatchEvent(new Event('change'));
    var shownAfter = regsHead.getBoundingClientRect().width > 0;
    allCols.checked = false;
    allCols.dispatchEvent(new Event('change'));
    check('"all columns" shows the kernel table\'s other columns', hiddenBefore && shownAfter);
  }
  var failed = out.filter(function (l) { return l.indexOf('FAIL') === 0; }).length;
  var result = document.getElementById('fprof-selftest');
  result.textContent = (failed ? 'FAIL' : 'PASS') + ' ' + out.length + ' checks\n' + out.join('\n');
})();
)JS";

// A finding with its `code spans` (names, commands) set as <code>; everything escaped.
std::string findingHtml(const std::string& f) {
  std::string out;
  bool in_code = false;
  size_t start = 0;
  for (size_t i = 0; i <= f.size(); ++i) {
    if (i < f.size() && f[i] != '`') continue;
    const std::string part = e(f.substr(start, i - start));
    out += in_code ? "<code>" + part + "</code>" : part;
    in_code = !in_code;
    start = i + 1;
  }
  return out;
}

std::string metaRow(const std::string& key, const std::string& value_html) {
  return "<dt>" + e(key) + "</dt><dd>" + value_html + "</dd>\n";
}

// One line under the title: what was run, on what, how much; the rest folds away (runDetails).
std::string summaryLine(const ReportData& r) {
  const RunHeader& h = r.header;
  std::string devices;
  for (const std::string& d : h.devices) devices += (devices.empty() ? "" : "; ") + d;
  // One line: what was run and how much first; the devices last, cut by the window if need be
  // (the whole line on hover, every detail under "Run details").
  const std::string text = fmt::format("{} · {} · {} launches in {} kernel groups, kernel time {} · {}", h.file, h.mode,
                                       h.kernel_count, r.group_count,
                                       formatDurationNs(static_cast<double>(h.total_kernel_ns)),
                                       devices.empty() ? "device unknown" : devices);
  std::string s = "<p class=\"summary\" id=\"summary\" title=\"" + e(text) + "\"><code>" + e(h.file) + "</code> &middot; " +
                  e(h.mode) + (h.has_counters ? " (counters)" : " (trace: no counters)") + " &middot; " +
                  e(fmt::format("{} launches in {} kernel groups, kernel time {}", h.kernel_count, r.group_count,
                                formatDurationNs(static_cast<double>(h.total_kernel_ns))));
  if (!h.warnings.empty()) {
    s += fmt::format(" &middot; <a class=\"warn\" href=\"#run-details\">{} warning{}</a>", h.warnings.size(),
                     h.warnings.size() == 1 ? "" : "s");
  }
  return s + " &middot; " + e(devices.empty() ? "device unknown" : devices) + "</p>\n";
}

std::string ceilingsTable(const ReportData& r) {
  if (r.roofs.empty()) {
    return "<p class=\"muted\">This run holds no ceilings (measure them with <code>fprof ceilings</code>), so no "
           "roofs are drawn and no % of roof is computed.</p>\n";
  }
  std::string s = "<table class=\"ceilings\"><thead><tr><th>roof</th><th class=\"num\">value</th><th>source</th>"
                  "<th>method</th></tr></thead><tbody>\n";
  for (const Roof& roof : r.roofs) {
    s += fmt::format("<tr><td>{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"muted\">{}</td></tr>\n",
                     e(roof.name), e(roof.is_bandwidth ? formatByteRate(roof.value) : formatFlopRate(roof.value)),
                     e(roof.source), e(roof.method));
  }
  return s + "</tbody></table>\n";
}

// The run's metadata and the ceilings, folded: they explain the answer, they are not it.
std::string runDetails(const ReportData& r) {
  const RunHeader& h = r.header;
  std::string s = "<details id=\"run-details\"" + std::string(h.warnings.empty() ? "" : " open") +
                  "><summary><h2>Run details</h2> <span class=\"src\">file, program, devices, counters, "
                  "warnings</span></summary>\n<dl class=\"meta\">\n";
  s += metaRow("file", "<code>" + e(h.file) + "</code>");
  s += metaRow("program", "<code>" + e(h.program.empty() ? "unknown" : h.program) + "</code>");
  if (!h.host.empty()) s += metaRow("host", e(h.host));
  s += metaRow("date", e(h.date_utc.empty() ? "unknown" : h.date_utc));
  s += metaRow("mode", e(h.mode) + (h.has_counters ? " (hardware counters present)" : " (trace only: timings, no counters)"));
  for (const std::string& d : h.devices) s += metaRow("device", e(d));
  const std::string timeline =
      h.timeline_known ? fmt::format("GPU busy {} of a {} span", formatDurationNs(static_cast<double>(h.gpu_busy_ns)),
                                     formatDurationNs(static_cast<double>(h.span_ns)))
                       : std::string("no timeline: kernels replayed for their counters carry no timestamps");
  s += metaRow("kernels", e(fmt::format("{} launches in {} groups (name and launch shape); kernel time {}, {}",
                                        h.kernel_count, r.group_count,
                                        formatDurationNs(static_cast<double>(h.total_kernel_ns)), timeline)));
  if (!h.counter_coverage.empty()) s += metaRow("counters", e(h.counter_coverage));
  if (!h.counter_missing.empty()) s += metaRow("without counters", "<span class=\"warn\">" + e(h.counter_missing) + "</span>");
  if (!h.counter_collection.empty()) s += metaRow("collected by", e(h.counter_collection));
  if (!h.graph_launches.empty()) s += metaRow("graph launches", e(h.graph_launches));
  s += metaRow("recorded by", "fprof " + e(h.fprof_version));
  for (const std::string& w : h.warnings) s += metaRow("warning", "<span class=\"warn\">" + e(w) + "</span>");
  s += "</dl>\n</details>\n";
  s += fmt::format("<details id=\"ceilings-details\"><summary><h2>Ceilings used</h2> <span class=\"src\">{} roofs: "
                   "measured by <code>fprof ceilings</code> where the run holds them, else datasheet</span></summary>\n",
                   r.roofs.size());
  return s + ceilingsTable(r) + "</details>\n";
}

// Several processes (a merged job): one row per rank, sortable like the kernel table.
std::string rankSection(const ReportData& r) {
  if (r.ranks.empty()) return "";
  std::string s = "<h2 id=\"ranks-h\">Ranks</h2>\n<p class=\"src\">One row per rank of the job (processes merged with "
                  "<code>fprof merge</code>): kernel time (trace), its share of all ranks' kernel time, the share of "
                  "the rank's time in NCCL kernels, and the kernel that took most of it. <code>fprof report --rank N"
                  "</code> reports one rank.</p>\n";
  s += "<div class=\"tablewrap\"><table id=\"rank-table\" class=\"sortable\"><thead><tr><th class=\"sortable num\">rank"
       "</th><th>host</th><th>pid</th><th>device</th><th>mode</th><th class=\"sortable num\">kernels</th>"
       "<th class=\"sortable num\">kernel time</th><th class=\"sortable num\">share</th><th class=\"sortable num\">NCCL"
       "</th><th>top kernel</th></tr></thead><tbody>\n";
  for (const analysis::RankRow& k : r.ranks) {
    const std::optional<double> rank =
        k.group.rank ? std::optional<double>(static_cast<double>(*k.group.rank)) : std::nullopt;
    s += "<tr>" + numCell(k.group.rank ? std::to_string(*k.group.rank) : k.group.label, rank) + "<td>" + e(k.hosts) +
         "</td><td>" + e(k.pids) + "</td><td>" + e(k.devices.empty() ? "?" : k.devices) + "</td><td>" + e(k.mode) +
         "</td>" + numCell(std::to_string(k.kernel_count), static_cast<double>(k.kernel_count)) +
         numCell(formatDurationNs(static_cast<double>(k.total_kernel_ns)), static_cast<double>(k.total_kernel_ns)) +
         numCell(formatPercent(k.share), k.share) + numCell(formatPercent(k.nccl_share), k.nccl_share) + "<td>" +
         (k.top_kernel.empty() ? std::string("none")
                               : e(formatPercent(k.topKernelShare())) + " <code" +
                                     titleAttr(k.top_kernel, r.names.shortName(k.top_kernel)) + ">" +
                                     e(r.names.shortName(k.top_kernel)) + "</code>") +
         "</td></tr>\n";
  }
  return s + "</tbody></table></div>\n";
}

std::string rooflineLegend(const ReportData& r) {
  const Palette palette = opPalette(r);
  std::string s = "<div class=\"legend\" id=\"legend-op\">";
  for (const OpRow& o : r.ops) {
    const std::string key = o.op == "(no NVTX range)" ? std::string() : o.op;
    if (!palette.ops().count(key)) continue;
    s += fmt::format("<span class=\"chip\" title=\"{1}\"><span class=\"sw\" style=\"background:{0}\"></span>{1}</span>",
                     palette.colour(key), e(o.op));
  }
  if (r.ops.size() > palette.ops().size()) {
    s += fmt::format("<span class=\"chip\"><span class=\"sw\" style=\"background:{}\"></span>other ops</span>",
                     Palette::kOther);
  }
  s += "</div>\n<div class=\"legend\" id=\"legend-roof\" hidden>";
  for (const RoofBand& b : kRoofBands) {
    s += fmt::format("<span class=\"chip\"><span class=\"sw\" style=\"background:{}\"></span>{} of roof</span>",
                     b.colour, b.label);
  }
  return s + fmt::format("<span class=\"chip\"><span class=\"sw\" style=\"background:{}\"></span>n/a</span></div>\n",
                         kRoofUnknown);
}

std::string rooflineSection(const ReportData& r) {
  std::string controls, about;
  if (r.header.has_counters) {
    controls = "<span class=\"controls\">colour by <label><input type=\"radio\" name=\"colour\" id=\"colour-op\" "
               "checked> op</label><label><input type=\"radio\" name=\"colour\" id=\"colour-roof\"> % of roof</label>"
               "<label><input type=\"checkbox\" id=\"show-levels\"> L2, L1</label></span>";
    int64_t off = 0;
    for (const GroupRow& g : r.groups) off += g.onRoofline() ? 0 : 1;
    about = "Measured counters summed per kernel group: FLOPs of all precisions over DRAM bytes (squares: over L2 and "
            "L1 bytes), area by share of kernel time, coloured by op or by fraction of roof; hover for the kernel, "
            "click for its row. Roofs: measured by <code>fprof ceilings</code> or datasheet (run details), DRAM, L2 "
            "and L1 diagonals and the compute roofs of fp32 and the precisions the kernels mostly use.";
    if (r.baseline) about += " Arrows run from the baseline's place of a group to its place in this run.";
    if (off > 0) about += fmt::format(" {} listed groups have no FLOPs or no DRAM bytes and are not on the chart.", off);
  }
  std::string s = "<section class=\"chart\">" + sectionHead("roofline-h", "Roofline", controls, about);
  s += renderRooflineSvg(r);
  if (r.header.has_counters) s += rooflineLegend(r);
  return s + "</section>\n";
}

std::string barsSection(const ReportData& r) {
  const Palette palette = opPalette(r);
  std::string s = "<h2 id=\"time-h\">Where the time goes</h2>\n<p class=\"src\">Measured kernel durations (trace), "
                  "as a share of total kernel time. Ops are NVTX ranges (the innermost range at each launch).</p>\n";
  s += "<h3>By op</h3>\n<div class=\"bars\" id=\"op-bars\">\n";
  const size_t shown_ops = std::min<size_t>(r.ops.size(), 20);
  for (size_t i = 0; i < shown_ops; ++i) {
    const OpRow& o = r.ops[i];
    const std::string key = o.op == "(no NVTX range)" ? std::string() : o.op;
    s += fmt::format("<div class=\"label\" title=\"{0}\">{0}</div><div><div class=\"bar\" style=\"width:{1:.2f}%;"
                     "background:{2}\"></div></div><div class=\"num\">{3} &middot; {4} &middot; {5} launches</div>\n",
                     e(o.op), o.share * 100.0, palette.colour(key), e(formatDurationNs(static_cast<double>(o.total_ns))),
                     e(formatPercent(o.share)), o.launches);
  }
  s += "</div>\n";
  if (r.ops.size() > shown_ops) s += fmt::format("<p class=\"muted\">{} more ops not shown.</p>\n", r.ops.size() - shown_ops);
  s += "<h3>By kernel group</h3>\n<div class=\"bars\" id=\"kernel-bars\">\n";
  const size_t shown = std::min<size_t>(r.groups.size(), 15);
  for (size_t i = 0; i < shown; ++i) {
    const GroupRow& g = r.groups[i];
    s += fmt::format("<div class=\"label mono\" title=\"{0}\">{6}</div><div><div class=\"bar\" style=\"width:{1:.2f}%;"
                     "background:{2}\"></div></div><div class=\"num\">{3} &middot; {4} &middot; {5} calls</div>\n",
                     e(g.name), g.share * 100.0, palette.colour(g.op), e(formatDurationNs(static_cast<double>(g.total_ns))),
                     e(formatPercent(g.share)), g.calls, e(g.short_name));
  }
  s += "</div>\n";
  return s;
}

std::string kernelTable(const ReportData& r) {
  std::string s = "<section class=\"kernels\">" +
                  sectionHead("kernels-h", "Kernels",
                              "<input id=\"kernel-filter\" type=\"search\" placeholder=\"filter (kernel, op, bound...)\" "
                              "aria-label=\"filter kernels\"><span id=\"kernel-table-count\" class=\"muted\"></span>"
                              "<label><input type=\"checkbox\" class=\"all-cols\" data-table=\"kernel-table\"> all "
                              "columns</label><label><input type=\"checkbox\" class=\"all-rows\" data-wrap=\"kernel-wrap\"> "
                              "all rows</label>",
                              "Kernels grouped by demangled name and launch shape, by their short names (hover for the "
                              "full one; the filter searches both). Time, calls, registers, local memory, theoretical "
                              "occupancy: measured trace. Intensity, FLOP/s, bytes/s, spill traffic, achieved "
                              "occupancy: measured counters. % of roof and bound: the analyzer's placement against the "
                              "ceilings (hover a bound for the reason; without counters only launch and latency bounds "
                              "can be told). To gain: time x (1 - fraction of roof), what the group would save at its "
                              "roof. Origin: from the kernel name. n/a: not computable from this run. Click a column "
                              "to sort; \"all columns\" shows the rest.");
  struct Col {
    const char* key;
    const char* label;
    bool num;
    bool more;  // shown with "all columns"
  };
  // Without counters the counter columns are all n/a, and a run without ops has no op column to
  // read: both wait behind "all columns". "% of roof" and "bound" always show.
  bool any_op = false;
  for (const GroupRow& g : r.groups) any_op = any_op || !g.op.empty();
  const bool counters = r.header.has_counters;
  std::vector<Col> cols = {
      {"rank", "#", true, false},           {"kernel", "kernel", false, false},
      {"op", "op", false, !any_op},         {"origin", "origin", false, true},
      {"grid", "grid", false, true},        {"block", "block", false, true},
      {"time", "time", true, false},        {"share", "share", true, false},
      {"calls", "calls", true, false},      {"mean", "mean", true, false},
      {"intensity", "intensity (DRAM)", true, !counters}, {"flops", "FLOP/s", true, !counters},
      {"bytes", "DRAM B/s", true, true},    {"roof", "% of roof", true, false},
      {"bound", "bound", false, false},     {"gain", "to gain", true, !counters},
      {"regs", "regs", true, true},         {"local", "local/thr", true, true},
      {"spill", "spill traffic", true, true}, {"occ", "occupancy (theor.)", true, true},
      {"achocc", "occupancy (achieved)", true, true},
  };
  // A metrics run says per group how its counters were obtained (or why there are none).
  const bool provenance = !r.header.counter_coverage.empty();
  if (provenance) cols.push_back({"counters", "counters", false, true});
  s += "<div class=\"tablewrap short\" id=\"kernel-wrap\"><table id=\"kernel-table\" class=\"sortable\"><thead><tr>";
  for (const Col& c : cols) {
    s += fmt::format("<th class=\"sortable{}{}\" data-col=\"{}\">{}</th>", c.num ? " num" : "", c.more ? " more" : "",
                     c.key, c.label);
  }
  s += "</tr></thead><tbody>\n";
  for (size_t i = 0; i < r.groups.size(); ++i) {
    const GroupRow& g = r.groups[i];
    const std::vector<std::string> cells = {
        numCell(std::to_string(i + 1), static_cast<double>(i + 1)),
        nameCell(g.name, g.short_name),
        "<td class=\"op\">" + e(g.op) + "</td>",
        "<td class=\"origin\">" + e(g.origin) + "</td>",
        "<td class=\"mono\">" + e(g.grid) + "</td>",
        "<td class=\"mono\">" + e(g.block) + "</td>",
        numCell(formatDurationNs(static_cast<double>(g.total_ns)), static_cast<double>(g.total_ns)),
        numCell(formatPercent(g.share), g.share),
        numCell(std::to_string(g.calls), static_cast<double>(g.calls)),
        numCell(formatDurationNs(g.mean_ns), g.mean_ns),
        optCell(g.intensity_dram, formatIntensity),
        optCell(g.flops_per_s, formatFlopRate),
        optCell(g.dram_bytes_per_s, formatByteRate),
        numCell(formatPercent(g.roof_fraction) + (g.roof_fraction ? " (" + g.binding_roof + ")" : ""), g.roof_fraction),
        "<td class=\"bound\" title=\"" + e(g.bound_reason) + "\">" + e(g.bound.empty() ? "n/a" : g.bound) + "</td>",
        optCell(g.headroom_ns, formatDurationNs),
        numCell(std::to_string(g.registers_per_thread), static_cast<double>(g.registers_per_thread)),
        numCell(formatBytes(static_cast<double>(g.local_bytes_per_thread)), static_cast<double>(g.local_bytes_per_thread)),
        optCell(g.spill_bytes, formatBytes),
        numCell(formatPercent(g.theoretical_occupancy), g.theoretical_occupancy),
        numCell(formatPercent(g.achieved_occupancy), g.achieved_occupancy),
        "<td class=\"counters\">" + e(g.counters) + "</td>",
    };
    s += fmt::format("<tr id=\"g{}\">", i);
    for (size_t c = 0; c < cols.size(); ++c) s += cols[c].more ? moreCell(cells[c]) : cells[c];
    s += "</tr>\n";
  }
  s += "</tbody></table></div>\n";
  if (r.omitted_groups > 0) {
    s += fmt::format("<p class=\"muted\" id=\"omitted\">{} more kernel groups ({} of kernel time) are not listed; the "
                     "table keeps the {} groups with the most time.</p>\n",
                     r.omitted_groups,
                     e(formatPercent(r.header.total_kernel_ns ? static_cast<double>(r.omitted_ns) / static_cast<double>(r.header.total_kernel_ns) : 0)),
                     r.groups.size());
  }
  return s + "</section>\n";
}

std::string stageChain(const FusionRow& f) {
  std::string s;
  for (size_t i = 0; i < f.stages.size(); ++i) {
    const std::string& shown = i < f.stage_labels.size() ? f.stage_labels[i] : f.stages[i];
    s += (s.empty() ? "" : " &rarr; ") +
         ("<span class=\"stage\"" + titleAttr(f.stages[i], shown) + ">" + e(shown) + "</span>");
  }
  return s;
}

std::string fusionSection(const ReportData& r) {
  std::string s = "<section class=\"fusion\">";
  if (r.fusion.empty()) {
    s += sectionHead("fusion-h", "Fusion opportunities", "", "");
    for (const std::string& n : r.fusion_notes) s += "<p class=\"muted\">" + e(n) + "</p>\n";
    return s + "<p id=\"fusion-none\">No producer&rarr;consumer pairs found in this run.</p>\n</section>\n";
  }
  std::string about =
      "Producer&rarr;consumer pairs and chains from the analyzer, ranked by payoff: the <b>predicted</b> saving summed "
      "over every run of the chain. Unfused time: measured (median per run of the chain). Fused time: predicted by the "
      "analyzer's model, and measured where the run also holds the fused variant, with the model's error. What to do: "
      "the suggestion for the candidate's pattern; its saving is the prediction beside it. Pairs that should not be "
      "fused come last, with the reason.";
  if (r.fusion_median_abs_error) {
    about += fmt::format(" Median absolute model error over {} pairs measured both ways: {}.", r.fusion_measured_pairs,
                         e(formatPercent(*r.fusion_median_abs_error)));
  }
  for (const std::string& n : r.fusion_notes) about += "<br>" + e(n);
  s += sectionHead("fusion-h", "Fusion opportunities",
                   "<label><input type=\"checkbox\" class=\"all-cols\" data-table=\"fusion-table\"> all columns</label>"
                   "<label><input type=\"checkbox\" class=\"all-rows\" data-wrap=\"fusion-wrap\"> all rows</label>",
                   about);
  s += "<div class=\"tablewrap short\" id=\"fusion-wrap\"><table id=\"fusion-table\"><thead><tr>"
       "<th class=\"num\">#</th><th data-col=\"pair\">candidate</th><th data-col=\"advice\">what to do</th>"
       "<th class=\"more\">kernels (producer &rarr; consumer)</th><th class=\"more\">evidence</th><th class=\"num\">"
       "runs</th><th class=\"num more\">intermediate</th><th class=\"num more\">launches removed</th><th class=\"num\">"
       "unfused (measured)</th><th class=\"num\">fused (predicted)</th><th class=\"more\">model</th><th class=\"num "
       "more\">fused (measured)</th><th class=\"num more\">model error</th><th class=\"num\" data-col=\"payoff\">"
       "payoff (predicted)</th><th class=\"num\">share</th><th class=\"more\">risks</th></tr></thead><tbody>\n";
  for (size_t i = 0; i < r.fusion.size(); ++i) {
    const FusionRow& f = r.fusion[i];
    std::string risks;
    if (!f.fuse) risks += "<b>do not fuse:</b> " + e(f.reason);
    for (const std::string& k : f.risks) risks += (risks.empty() ? "" : "<br>") + e(k);
    std::string intermediate = e(orNa(f.intermediate_bytes, formatBytes));
    if (f.intermediate_bytes) intermediate += "<br><span class=\"src\">" + e(f.bytes_source) + "</span>";
    std::string names;
    for (const std::string& n : f.intermediates) names += (names.empty() ? "" : ", ") + n;
    const std::string row_attr =
        f.fuse ? fmt::format(" class=\"fuse\" data-payoff=\"{:.6g}\"", f.payoff_ns.value_or(-1)) : std::string(" class=\"nofuse\"");
    // What to do, first-screen: a declared pair's name, the suggestion (a prediction, like the
    // payoff beside it) or why not to fuse, and how many risks the full columns list.
    std::string advice = f.declared ? e(f.name) + "<br>" : std::string();
    advice += f.fuse ? e(f.suggestion) : "<b>do not fuse:</b> " + e(f.reason);
    if (!f.risks.empty()) {
      advice += fmt::format("<br><span class=\"src\">{} risk{}: {}</span>", f.risks.size(), f.risks.size() == 1 ? "" : "s",
                            e(f.risks.front()));
    }
    s += fmt::format(
        "<tr{}><td class=\"num\">{}</td><td class=\"mono pair\">{}</td><td class=\"advice\">{}</td>"
        "<td class=\"name more\">{}{}</td><td class=\"more\">{}</td><td class=\"num\">{}</td><td class=\"num more\">{}</td>"
        "<td class=\"num more\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"more\">{}</td>"
        "<td class=\"num more\">{}</td><td class=\"num more\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"risks more\">{}</td></tr>\n",
        row_attr, i + 1, e(f.declared ? f.id : f.name), advice, stageChain(f),
        names.empty() ? "" : "<br><span class=\"src\">intermediates: " + e(names) + "</span>", e(f.evidence),
        f.instances, intermediate, f.launches_removed, e(formatDurationNs(f.unfused_ns)),
        e(orNa(f.predicted_fused_ns, formatDurationNs)), e(f.model.empty() ? "n/a" : f.model),
        e(orNa(f.measured_fused_ns, formatDurationNs)), e(f.model_error ? formatSignedPercent(*f.model_error) : "n/a"),
        e(orNa(f.payoff_ns, formatDurationNs)), e(formatPercent(f.payoff_share)), risks.empty() ? "none flagged" : risks);
  }
  return s + "</tbody></table></div>\n</section>\n";
}

// The baseline's fusion candidates this run runs fused: predicted and measured saving side by side.
std::string appliedFusionsTable(const BaselineSection& b) {
  std::string s = "<h3>Fusions applied</h3>\n<p class=\"src\">" + e(b.fusions_note) + ".</p>\n";
  if (b.fusions.empty()) return s + "<p id=\"applied-none\">None of the baseline's candidates runs fused here.</p>\n";
  s += "<div class=\"tablewrap\"><table id=\"applied-table\"><thead><tr><th>candidate (baseline)</th><th>found by</th>"
       "<th class=\"num\">instances</th><th class=\"num\">launches</th><th class=\"num\">saving (predicted)</th>"
       "<th class=\"num\">saving (measured)</th><th class=\"num\">error</th></tr></thead><tbody>\n";
  for (const AppliedFusionRow& f : b.fusions) {
    s += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{} &rarr; {}</td>"
                     "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
                     e(f.name), e(f.matched_by), f.instances, f.launches_before, f.launches_after,
                     e(orNa(f.predicted_saving_ns, formatDurationNs)), e(formatDurationNs(f.measured_saving_ns)),
                     e(f.error ? formatSignedPercent(*f.error) : "n/a"));
  }
  return s + "</tbody></table></div>\n";
}

std::string baselineSection(const ReportData& r) {
  if (!r.baseline) return "";
  const BaselineSection& b = *r.baseline;
  std::string s = "<h2 id=\"diff-h\">Against the baseline</h2>\n<dl class=\"meta\">\n";
  s += metaRow("baseline", "<code>" + e(b.header.file) + "</code>");
  s += metaRow("program", "<code>" + e(b.header.program) + "</code>");
  s += metaRow("date", e(b.header.date_utc.empty() ? "unknown" : b.header.date_utc));
  s += metaRow("kernel time", e(formatDurationNs(static_cast<double>(b.header.total_kernel_ns)) + " -> " +
                                formatDurationNs(static_cast<double>(r.header.total_kernel_ns))));
  s += metaRow("matching", e(b.note));
  s += "</dl>\n";
  s += fmt::format("<p><span class=\"verdict {}\" id=\"gate-verdict\">gate: {}</span> {} kernels checked. "
                   "<span class=\"src\">{} (the same verdict as <code>fprof gate</code> with default thresholds)</span></p>\n",
                   b.gate.pass ? "pass" : "fail", b.gate.pass ? "pass" : "FAIL", b.gate.kernels_checked, e(b.gate.method));
  if (!b.gate.reasons.empty()) {
    s += "<ul>";
    for (const std::string& reason : b.gate.reasons) s += "<li class=\"reg\">" + e(reason) + "</li>";
    s += "</ul>\n";
  }
  s += appliedFusionsTable(b);
  s += "<div class=\"tablewrap\"><table id=\"diff-table\" class=\"sortable\"><thead><tr><th class=\"sortable\">kernel</th>"
       "<th>shape</th><th class=\"sortable num\">baseline (total)</th><th class=\"sortable num\">this run (total)</th>"
       "<th class=\"sortable num\">median per launch</th><th class=\"sortable num\">p (slower)</th><th>note</th></tr></thead><tbody>\n";
  const size_t shown = std::min<size_t>(b.diff.size(), 500);
  for (size_t i = 0; i < shown; ++i) {
    const DiffRow& d = b.diff[i];
    const std::string cls = d.regression ? "reg" : (d.change && *d.change < 0 ? "imp" : "");
    s += std::string("<tr") + (d.regression ? " class=\"regression\"" : "") + ">" + nameCell(d.name, d.short_name) +
         "<td class=\"mono\">" + e(d.shape) + "</td>";
    s += optCell(d.base_ns, formatDurationNs);
    s += optCell(d.cur_ns, formatDurationNs);
    s += d.change ? fmt::format("<td class=\"num {}\" data-v=\"{:.6g}\">{}</td>", cls, *d.change, formatSignedPercent(*d.change))
                  : std::string("<td class=\"num na\">n/a</td>");
    s += d.p_value ? fmt::format("<td class=\"num\" data-v=\"{:.6g}\">{:.2g}</td>", *d.p_value, *d.p_value)
                   : std::string("<td class=\"num na\">n/a</td>");
    s += "<td>" + e(d.note) + "</td></tr>\n";
  }
  s += "</tbody></table></div>\n";
  if (b.diff.size() > shown) s += fmt::format("<p class=\"muted\">{} smaller changes not listed.</p>\n", b.diff.size() - shown);
  return s;
}

// Data for the script (tooltips) and for tools that read the report; embedded as inert JSON.
std::string embeddedData(const ReportData& r) {
  nlohmann::json groups = nlohmann::json::array();
  for (const GroupRow& g : r.groups) {
    std::string tip = shownText(g.short_name) + (g.short_name == g.name ? "" : "\n" + shownText(g.name)) + "\ngrid " +
                      g.grid + "  block " + g.block + "\nop: " + (g.op.empty() ? "(none)" : shownText(g.op)) +
                      "\ntime " + formatDurationNs(static_cast<double>(g.total_ns)) + " (" + formatPercent(g.share) +
                      "), " + std::to_string(g.calls) + " calls" + "\nintensity (DRAM) " +
                      orNa(g.intensity_dram, formatIntensity) + ", achieved " + orNa(g.flops_per_s, formatFlopRate) +
                      "\n" + formatPercent(g.roof_fraction) + " of roof" + (g.bound.empty() ? "" : ", " + g.bound + " bound");
    groups.push_back({{"name", shownText(g.name)}, {"short_name", shownText(g.short_name)}, {"op", shownText(g.op)},
                      {"total_ns", g.total_ns}, {"calls", g.calls}, {"tip", tip}});
  }
  nlohmann::json findings = nlohmann::json::array();
  for (const std::string& f : r.findings) findings.push_back(shownText(f));
  nlohmann::json j = {{"file", shownText(r.header.file)}, {"program", shownText(r.header.program)},
                      {"mode", shownText(r.header.mode)}, {"has_counters", r.header.has_counters},
                      {"findings", std::move(findings)}, {"groups", std::move(groups)}};
  return jsonForScript(j);
}

}  // namespace

std::string_view reportStyleSheet() { return kStyle; }

std::string renderHtml(const ReportData& r, const HtmlOptions& options) {
  const std::string nonce = options.csp_nonce.empty() ? randomNonce() : options.csp_nonce;
  std::string s;
  s.reserve(64 * 1024 + r.groups.size() * 2048);
  s += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  // The policy comes first: no fetches of any kind, and only scripts carrying the nonce run.
  s += fmt::format("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
                   "img-src data:; script-src 'nonce-{}'; base-uri 'none'; form-action 'none'\">\n",
                   nonce);
  s += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  s += "<meta name=\"generator\" content=\"fprof " + e(FPROF_VERSION_STRING) + "\">\n";
  s += "<title>fprof report: " + e(r.header.program.empty() ? r.header.file : r.header.program) + "</title>\n";
  s += "<style>" + std::string(kStyle) + "</style>\n</head>\n<body>\n";
  s += "<h1 title=\"" + e(r.header.program) + "\">fprof report <span class=\"muted\">" + e(r.header.program) +
       "</span></h1>\n";
  s += summaryLine(r);
  // The first screen is the answer: the findings and the roofline, then the kernels and the
  // fusions; the run's details and ceilings fold away at the end.
  s += "<div class=\"first\"><section class=\"answer\">" + sectionHead("findings-h", "Findings", "", "") +
       "<ol class=\"findings\" "
       "id=\"findings\">\n";
  for (const std::string& f : r.findings) s += "<li>" + findingHtml(f) + "</li>\n";
  s += "</ol></section>\n" + rooflineSection(r) + "</div>\n";
  s += kernelTable(r);
  s += fusionSection(r);
  s += baselineSection(r);
  s += rankSection(r);
  s += barsSection(r);
  s += runDetails(r);
  s += "<footer>Generated by fprof " + e(FPROF_VERSION_STRING) +
       ". Sources: <b>measured</b> = recorded on the GPU in this run (trace timings, hardware counters, "
       "<code>fprof ceilings</code>); <b>datasheet</b> = computed from device attributes; <b>predicted</b> = the "
       "analyzer's fusion model.</footer>\n";
  s += "<div id=\"tooltip\" role=\"tooltip\"></div>\n<pre id=\"fprof-selftest\"></pre><pre id=\"fprof-layout\"></pre>\n";
  s += "<script type=\"application/json\" id=\"fprof-data\">" + embeddedData(r) + "</script>\n";
  s += "<script nonce=\"" + nonce + "\">" + kScript + "</script>\n</body>\n</html>\n";
  return s;
}

}  // namespace fprof::reports
