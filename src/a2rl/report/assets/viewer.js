// What the run viewers (trajectory.html, evals/<id>.html) share: elements built with
// textContent only (record text is never parsed as markup), and their data read on demand
// from script files (trajectory/chunk-N.js, evals/<id>/page-N.js), each calling the page's
// register(i, items). A file is added as a <script> element because Chromium refuses fetch()
// from file://.
(function () {
  "use strict";
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  // The script files `srcs` (`what` names one in an error): data[i] once file i registered;
  // load(i) resolves then (one <script> per file however often it is asked for) and rejects,
  // naming the file, when it cannot be read; loadAll() reads every file, in order.
  function chunks(srcs, what) {
    var data = {}, waiting = {};
    function register(i, items) {
      if (data[i]) return;
      data[i] = items;
      (waiting[i] || []).forEach(function (w) { w.resolve(); });
      delete waiting[i];
    }
    function load(i) {
      return new Promise(function (resolve, reject) {
        if (data[i]) { resolve(); return; }
        var first = !waiting[i];
        (waiting[i] = waiting[i] || []).push({resolve: resolve, reject: reject});
        if (!first) return;
        var s = document.createElement("script");
        s.src = srcs[i];
        // Unreadable, or read without registering (not one of the report's data files):
        // every wait on it fails, and a later load(i) tries again.
        function fail() {
          var err = new Error(what + " " + i + " could not be read");
          (waiting[i] || []).forEach(function (w) { w.reject(err); });
          delete waiting[i];
          s.remove();
        }
        s.onerror = fail;
        s.onload = function () { if (!data[i]) fail(); };
        document.body.appendChild(s);
      });
    }
    function loadAll() {
      return srcs.reduce(function (p, _s, i) {
        return p.then(function () { return load(i); });
      }, Promise.resolve());
    }
    return {data: data, register: register, load: load, loadAll: loadAll};
  }
  window.A2RLViewer = {el: el, chunks: chunks};
})();
