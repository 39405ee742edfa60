// One evaluation's per-item page (evals/<id>.html): the items in page files
// (evals/<id>/page-N.js, each calling A2RLEvaluation.register), read through viewer.js when
// shown or when a filter needs them. Every record text is set with textContent: a completion
// is never parsed as markup.
(function () {
  "use strict";
  var meta = JSON.parse(document.getElementById("eval-meta").textContent);
  var box = document.getElementById("eval-items");
  var where = document.getElementById("eval-where");
  var FOLD_LINES = 8, FOLD_CHARS = 1200, PER = meta.page_items;
  var files = A2RLViewer.chunks(meta.pages, "page"), pages = files.data, load = files.load;
  var el = A2RLViewer.el;
  var view = null;   // indexes of the filtered items, or null for all
  var at = 0;        // first item shown

  function folded(cls, label, text) {
    text = String(text);
    var wrap = el("div", "field " + cls);
    wrap.appendChild(el("div", "label", label));
    var lines = text.split("\n");
    if (lines.length <= FOLD_LINES && text.length <= FOLD_CHARS) {
      wrap.appendChild(el("pre", null, text));
      return wrap;
    }
    var d = el("details");
    d.appendChild(el("summary", null, lines.slice(0, 4).join("\n").slice(0, 400) + " … (" +
      lines.length + " lines, " + text.length + " characters)"));
    d.appendChild(el("pre", null, text));
    wrap.appendChild(d);
    return wrap;
  }
  function get(i) { return pages[Math.floor(i / PER)][i % PER]; }
  function render(it) {
    var card = el("div", "item eval-item" + (it.cls ? " " + it.cls : ""));
    card.id = "item-" + it.i;
    var h = el("div", "head");
    h.appendChild(el("span", "time", "#" + (it.i + 1)));
    h.appendChild(el("code", null, it.id !== undefined ? it.id : ""));
    if (it.verdict !== undefined)
      h.appendChild(el("span", "badge verdict" + (it.cls === "wrong" ? " bad" : ""),
        it.cls + " · " + it.verdict));
    card.appendChild(h);
    if (it.prompt !== undefined) card.appendChild(folded("prompt", "prompt", it.prompt));
    if (it.completion !== undefined)
      card.appendChild(folded("completion", "completion", it.completion));
    for (var k in it.fields || {})
      if (Object.prototype.hasOwnProperty.call(it.fields, k))
        card.appendChild(folded("other", k, it.fields[k]));
    return card;
  }
  function show() {
    var total = view ? view.length : meta.n_items;
    var first = at, last = Math.min(total, at + PER);
    var need = {};
    for (var i = first; i < last; i++) need[Math.floor((view ? view[i] : i) / PER)] = 1;
    Promise.all(Object.keys(need).map(function (p) { return load(Number(p)); })).then(function () {
      box.textContent = "";
      var frag = document.createDocumentFragment();
      for (var i = first; i < last; i++) frag.appendChild(render(get(view ? view[i] : i)));
      box.appendChild(frag);
      where.textContent = total ? "items " + (first + 1) + "–" + last + " of " + total +
        (view ? " (filtered from " + meta.n_items + ")" : "") : "no item matches";
      document.getElementById("eval-prev").disabled = first === 0;
      document.getElementById("eval-next").disabled = last >= total;
    }, function (err) { where.textContent = String(err.message || err); });
  }
  document.getElementById("eval-prev").addEventListener("click", function () {
    at = Math.max(0, at - PER); show();
  });
  document.getElementById("eval-next").addEventListener("click", function () {
    at += PER; show();
  });
  document.getElementById("eval-filter").addEventListener("submit", function (ev) {
    ev.preventDefault();
    var which = document.getElementById("eval-which").value;
    var q = document.getElementById("eval-q").value.trim().toLowerCase();
    if (which === "all" && !q) { view = null; at = 0; show(); return; }
    where.textContent = "filtering…";
    files.loadAll().then(function () {
      view = [];
      for (var i = 0; i < meta.n_items; i++) {
        var it = get(i);
        if (which !== "all" && it.cls !== which) continue;
        if (q && ((it.prompt || "") + "\n" + (it.completion || "")).toLowerCase().indexOf(q) < 0)
          continue;
        view.push(i);
      }
      at = 0;
      show();
    }, function (err) { where.textContent = String(err.message || err); });
  });
  window.A2RLEvaluation = {register: files.register, meta: meta};
  if (meta.n_items) show(); else where.textContent = "no items recorded";
})();
