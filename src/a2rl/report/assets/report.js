// The report's pages: charts and tables. Loaded last on every page; the page's CSP runs only
// files of the report, so all data comes as inert JSON (<script type="application/json">).
"use strict";

// Charts: each figure is JSON beside its div. Figures carry an empty template; the site's
// template (A2RL_PLOTLY_TEMPLATE, written above this file when the site is built) is applied
// here, once for the whole site rather than in every figure.
document.querySelectorAll("div.chart[data-figure]").forEach(function (el) {
  var fig = JSON.parse(document.getElementById(el.dataset.figure + "-data").textContent);
  var template = window.A2RL_PLOTLY_TEMPLATE;
  fig.layout = fig.layout || {};
  if (template && !(fig.layout.template && fig.layout.template.layout)) {
    fig.layout.template = template;
  }
  Plotly.newPlot(el, fig.data, fig.layout, {responsive: true, displaylogo: false});
});

// Tables: every table of two rows or more can be sorted (click a column header; again to
// reverse) and filtered (the box above it keeps the rows holding the text), and shows
// PAGE_ROWS rows at a time. A table is either in the page (<table>) or, when long, JSON
// (div.dt-lazy: headers, rows of cell HTML the site escaped, row classes) whose rows are
// made only when their page is shown. Rows of class "baseline" stay on top.
var PAGE_ROWS = 100;

function cellText(html) {
  var t = document.createElement("template");
  t.innerHTML = html;
  return t.content.textContent;
}

function sortKey(text) {
  var t = text.trim();
  if (t === "" || t === "—") return null;
  var m = /^[Δ\s]*([-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?)/i.exec(t);
  return m ? parseFloat(m[1]) : t.toLowerCase();
}

function compareKeys(a, b) {
  if (a === b) return 0;
  if (a === null) return 1;  // unknown values last, whichever the direction
  if (b === null) return -1;
  if (typeof a === typeof b) return a < b ? -1 : 1;
  return typeof a === "number" ? -1 : 1;  // numbers before text
}

function DataTable(table, headerRow, rows, pinned) {
  this.table = table;
  this.body = table.tBodies[0] || table.appendChild(document.createElement("tbody"));
  this.rows = rows;  // {texts: [..], keys: [..] (made when first sorted), el: <tr> or null, make}
  this.pinned = pinned;
  this.shown = rows;
  this.page = 0;
  this.sortCol = -1;
  this.sortDir = 1;
  var self = this;
  var bar = document.createElement("div");
  bar.className = "dt-bar";
  this.filter = document.createElement("input");
  this.filter.type = "search";
  this.filter.className = "dt-filter";
  this.filter.placeholder = "filter rows";
  this.filter.setAttribute("aria-label", "filter the table's rows");
  this.filter.addEventListener("input", function () { self.apply(); });
  this.info = document.createElement("span");
  this.info.className = "dt-info";
  this.prev = document.createElement("button");
  this.prev.textContent = "‹ previous";
  this.prev.addEventListener("click", function () { self.page -= 1; self.render(); });
  this.next = document.createElement("button");
  this.next.textContent = "next ›";
  this.next.addEventListener("click", function () { self.page += 1; self.render(); });
  bar.append(this.filter, this.info, this.prev, this.next);
  table.parentNode.insertBefore(bar, table);
  Array.prototype.forEach.call(headerRow.cells, function (th, col) {
    th.classList.add("dt-sortable");
    th.title = "sort by this column";
    th.addEventListener("click", function () { self.sortBy(col); });
  });
  this.headers = headerRow.cells;
  this.render();
}

DataTable.prototype.sortBy = function (col) {
  this.sortDir = this.sortCol === col ? -this.sortDir : 1;
  this.sortCol = col;
  Array.prototype.forEach.call(this.headers, function (th, i) {
    th.classList.toggle("dt-asc", i === col && this.sortDir === 1);
    th.classList.toggle("dt-desc", i === col && this.sortDir === -1);
  }, this);
  var dir = this.sortDir;
  this.rows.forEach(function (r, i) { r.order = i; });
  this.rows.sort(function (a, b) {
    var ka = sortKey(a.texts[col] || ""), kb = sortKey(b.texts[col] || "");
    if (ka === null || kb === null) return compareKeys(ka, kb) || a.order - b.order;
    return dir * compareKeys(ka, kb) || a.order - b.order;
  });
  this.apply();
};

DataTable.prototype.apply = function () {
  var q = this.filter.value.trim().toLowerCase();
  this.shown = q ? this.rows.filter(function (r) {
    return r.texts.some(function (t) { return t.toLowerCase().indexOf(q) >= 0; });
  }) : this.rows;
  this.page = 0;
  this.render();
};

DataTable.prototype.render = function () {
  var pages = Math.max(1, Math.ceil(this.shown.length / PAGE_ROWS));
  this.page = Math.min(Math.max(0, this.page), pages - 1);
  var start = this.page * PAGE_ROWS, part = this.shown.slice(start, start + PAGE_ROWS);
  var frag = document.createDocumentFragment();
  this.pinned.forEach(function (tr) { frag.appendChild(tr); });
  part.forEach(function (r) { frag.appendChild(r.el || (r.el = r.make())); });
  this.body.replaceChildren(frag);
  var of = this.shown.length === this.rows.length ? "" : " (filtered from " + this.rows.length + ")";
  this.info.textContent = this.shown.length ?
    "rows " + (start + 1) + "–" + (start + part.length) + " of " + this.shown.length + of :
    "no row holds this text" + of;
  this.prev.disabled = this.page === 0;
  this.next.disabled = this.page >= pages - 1;
  this.prev.hidden = this.next.hidden = pages === 1;
};

function staticTable(table) {
  var all = Array.prototype.slice.call(table.rows);
  var headers = all.filter(function (tr) {
    return tr.cells.length && Array.prototype.every.call(tr.cells, function (c) { return c.tagName === "TH"; });
  });
  var body = all.filter(function (tr) { return headers.indexOf(tr) < 0; });
  var pinned = body.filter(function (tr) { return tr.classList.contains("baseline"); });
  var rows = body.filter(function (tr) { return pinned.indexOf(tr) < 0; }).map(function (tr) {
    return {el: tr, texts: Array.prototype.map.call(tr.cells, function (c) { return c.textContent; })};
  });
  if (!headers.length || rows.length < 2) return;
  if (!table.tBodies.length || table.tBodies[0].contains(headers[0])) {
    var head = table.tHead || table.createTHead();
    headers.forEach(function (tr) { head.appendChild(tr); });
  }
  new DataTable(table, headers[headers.length - 1], rows, pinned);
}

function lazyTable(holder) {
  var spec = JSON.parse(document.getElementById(holder.dataset.table).textContent);
  var table = document.createElement("table");
  var head = table.createTHead().insertRow();
  spec.headers.forEach(function (h) {
    var th = document.createElement("th");
    th.textContent = h;
    head.appendChild(th);
  });
  table.appendChild(document.createElement("tbody"));
  holder.appendChild(table);
  var rows = spec.rows.map(function (cells, i) {
    return {
      texts: cells.map(cellText),
      make: function () {
        var tr = document.createElement("tr");
        if (spec.classes && spec.classes[i]) tr.className = spec.classes[i];
        cells.forEach(function (html) { tr.insertCell().innerHTML = html; });
        return tr;
      },
    };
  });
  new DataTable(table, head, rows, []);
}

document.querySelectorAll("div.dt-lazy[data-table]").forEach(lazyTable);
document.querySelectorAll("main table").forEach(function (t) {
  if (!t.closest("div.dt-lazy")) staticTable(t);
});
