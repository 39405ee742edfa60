// The trajectory viewer of one run (trajectory.html): the run's timeline in chunk files
// (trajectory/chunk-N.js, each calling A2RLTrajectory.register), read through viewer.js. A
// chunk's data is read when a search or an anchor needs it and drawn only when its place on
// the page scrolls into view (or an anchor points into it), so a long run opens with one
// chunk drawn. Every piece of record text is set with textContent: agent text is never parsed
// as markup.
(function () {
  "use strict";
  var meta = JSON.parse(document.getElementById("traj-meta").textContent);
  var timeline = document.getElementById("traj-timeline");
  var FOLD_LINES = 6, FOLD_CHARS = 800;
  var HIDDEN = {call_id: 1};  // extra fields that only pair events
  var files = A2RLViewer.chunks(meta.chunks.map(function (c) { return c.src; }), "chunk");
  var data = files.data, load = files.load, loadAll = files.loadAll;
  var el = A2RLViewer.el;
  var sections = [], drawn = {};

  function clock(t) {
    t = Math.max(0, Math.round(Number(t) || 0));
    var h = Math.floor(t / 3600), m = Math.floor(t / 60) % 60, s = t % 60;
    return h + ":" + (m < 10 ? "0" : "") + m + ":" + (s < 10 ? "0" : "") + s;
  }
  function anchorFor(t) { return "#t=" + Number(t).toFixed(2); }
  // Long text folded: the first lines shown, the whole in a <details>; `label` (optional)
  // heads it.
  function folded(cls, text, label) {
    text = String(text);
    var lines = text.split("\n");
    var short = lines.length <= FOLD_LINES && text.length <= FOLD_CHARS;
    var box = short ? el("pre", cls, text) : el("details", cls);
    if (!short) {
      box.appendChild(el("summary", null, (label ? label + ": " : "") +
        lines.slice(0, 3).join("\n").slice(0, 300) + " … (" + lines.length + " lines)"));
      box.appendChild(el("pre", null, text));
      return box;
    }
    if (!label) return box;
    var wrap = el("div", cls);
    box.className = "";
    wrap.appendChild(el("span", "label", label));
    wrap.appendChild(box);
    return wrap;
  }
  // A tool's output: folded beyond a few lines, an error (the tool said the call failed)
  // marked, a cut said.
  function output(ev) {
    var label = ev.out_err ? "error output" : "output";
    var cls = "out" + (ev.out_err ? " out-err" : "");
    if (ev.out_chars) label += " (" + ev.out_chars + " characters, middle cut)";
    if (ev.out === "") return el("div", cls + " empty", label + ": (empty)");
    return folded(cls, ev.out, label);
  }
  // A unified diff, each line coloured by its mark.
  function diffBlock(text) {
    var pre = el("pre", "diff-text");
    String(text).split("\n").forEach(function (line) {
      var c = line.charAt(0);
      var cls = line.slice(0, 3) === "---" || line.slice(0, 3) === "+++" ? "d-file" :
        c === "+" ? "d-add" : c === "-" ? "d-del" : c === "@" ? "d-hunk" : null;
      pre.appendChild(el("span", cls, line + "\n"));
    });
    return pre;
  }
  function exitBadge(code) {
    if (code === undefined || code === null) return el("span", "badge", "exit ?");
    return el("span", "badge" + (code === 0 ? "" : " bad"), "exit " + code);
  }
  function extras(obj) {
    var out = [];
    for (var k in obj)
      if (Object.prototype.hasOwnProperty.call(obj, k) && HIDDEN[k] === undefined)
        out.push(k + "=" + obj[k]);
    return out.join(" ");
  }
  function head(item, label) {
    var h = el("div", "head");
    var a = el("a", "time", clock(item.t));
    a.href = item.k === "turn" ? "#turn-" + item.n : anchorFor(item.t);
    h.appendChild(a);
    h.appendChild(el("span", "kind", label));
    if (item.phase) h.appendChild(el("span", "phase", item.phase));
    return h;
  }
  function renderEvent(ev) {
    var row = el("div", "ev ev-" + ev.k + (ev.err ? " err" : ""));
    if (ev.k === "message") {
      row.appendChild(folded("msg", ev.text || ""));
    } else if (ev.k === "tool_call") {
      row.appendChild(el("span", "tool", ev.name || "tool"));
      if (ev.err) row.appendChild(el("span", "badge bad", "error"));
      var args = [ev.cmd, ev.path, ev.text, ev.extra ? extras(ev.extra) : ""].filter(Boolean)
        .join("  ");
      if (args) row.appendChild(folded("args", args));
      if (ev.out !== undefined) row.appendChild(output(ev));
    } else if (ev.k === "command") {
      row.appendChild(exitBadge(ev.exit));
      row.appendChild(folded("cmd", "$ " + (ev.cmd || "")));
      if (ev.out !== undefined) row.appendChild(output(ev));
      else if (ev.extra && ev.extra.output) row.appendChild(folded("out", ev.extra.output));
    } else if (ev.k === "file_edit") {
      row.appendChild(el("span", "tool", "edit"));
      row.appendChild(el("code", null, ev.path || ""));
    } else if (ev.k === "usage") {
      row.appendChild(el("span", "note", "tokens in " + (ev.tokens ? ev.tokens[0] : "?") +
        " / out " + (ev.tokens ? ev.tokens[1] : "?")));
    } else {
      row.appendChild(el("span", "note", ev.k + " " + [ev.name, ev.cmd, ev.path, ev.text]
        .filter(Boolean).join(" ")));
    }
    return row;
  }
  function render(item, i, j) {
    var box = el("div", "item item-" + item.k + (item.err ? " err" : ""));
    box.dataset.t = item.t;
    box.id = item.k === "turn" ? "turn-" + item.n : "item-" + i + "-" + j;
    if (item.k === "turn") {
      box.appendChild(head(item, "turn " + item.n + (item.tools ? " · " + item.tools +
        " tool call(s)" : "")));
      (item.ev || []).forEach(function (ev) { box.appendChild(renderEvent(ev)); });
    } else if (item.k === "exec") {
      var h = head(item, "program");
      h.appendChild(exitBadge(item.exit));
      box.appendChild(h);
      box.appendChild(folded("cmd", item.cmd));
    } else if (item.k === "sub") {
      box.appendChild(head(item, "submission " + item.id + " · " + item.status +
        (item.score !== null && item.score !== undefined ? " · score " + item.score : "") +
        (item.improvement !== null && item.improvement !== undefined ?
          " (Δ " + (item.improvement >= 0 ? "+" : "") + item.improvement + ")" : "")));
      if (item.error) box.appendChild(folded("out", item.error));
      if (item.eval) {
        var link = el("a", "eval-link", "per-item prompts, completions and verdicts");
        link.href = item.eval;
        box.appendChild(link);
      }
    } else if (item.k === "prompt") {
      box.appendChild(head(item, item.src));
      box.appendChild(folded("msg prompt-text", item.text));
    } else if (item.k === "snap") {
      box.appendChild(head(item, "code snapshot " + item.tag + " · " + item.files + " file(s)"));
      if (item.changed && item.changed.length)
        box.appendChild(el("div", "note", "code changed (" + item.n_changed + "): " +
          item.changed.join(", ")));
      if (item.artifact)
        box.appendChild(el("div", "note apart", "checkpoint and model files changed, not code (" +
          item.n_artifact + "): " + item.artifact.join(", ")));
      if (item.harness)
        box.appendChild(el("div", "note apart", "files a2rl wrote, not the agent's code (" +
          item.n_harness + "): " + item.harness.join(", ")));
      if (item.diff) {
        var d = el("details", "diff");
        d.appendChild(el("summary", null, "diff of the agent's code from the previous snapshot" +
          (item.cut ? " (cut)" : "")));
        d.appendChild(diffBlock(item.diff));
        box.appendChild(d);
      }
    } else if (item.k === "journal") {
      box.appendChild(head(item, "journal " + item.id + " · " + item.kind + " by " + item.author));
      box.appendChild(folded("msg", item.text));
    } else if (item.k === "ckpt") {
      box.appendChild(head(item, "revision checkpoint " + item.id + " · " + item.action));
      if (item.triggers && item.triggers.length)
        box.appendChild(el("div", "note", "triggers: " + item.triggers.join(", ")));
      if (item.reason) box.appendChild(folded("msg", item.reason));
    } else if (item.k === "log") {
      box.appendChild(head(item, "agent log · " + item.lines + " line(s)"));
      var times = item.times || [];
      box.appendChild(folded("out log-lines", String(item.text).split("\n").map(function (line, k) {
        return (times[k] !== undefined ? clock(times[k]) + "  " : "") + line;
      }).join("\n")));
    } else if (item.k === "budget") {
      box.appendChild(head(item, "end of the budget"));
    } else {
      box.appendChild(head(item, item.k));
    }
    return box;
  }

  function draw(i) {
    if (drawn[i]) return;
    drawn[i] = true;
    var sec = sections[i];
    if (observer) observer.unobserve(sec);
    sec.textContent = "";
    sec.classList.remove("pending");
    sec.style.minHeight = "";
    var frag = document.createDocumentFragment();
    data[i].forEach(function (item, j) { frag.appendChild(render(item, i, j)); });
    sec.appendChild(frag);
  }
  // The chunk's data read and drawn; when it cannot be read, its placeholder says so.
  function show(i) {
    return load(i).then(function () { draw(i); }, function (err) {
      if (!drawn[i]) sections[i].firstChild.textContent = String(err.message || err);
      throw err;
    });
  }

  // Placeholders for every chunk, in order, each about as tall as its chunk will be (so that
  // only the chunks in view are drawn), drawn as they scroll into view.
  var observer = "IntersectionObserver" in window ? new IntersectionObserver(function (entries) {
    entries.forEach(function (e) {
      if (e.isIntersecting) show(Number(e.target.dataset.chunk));
    });
  }, {rootMargin: "600px"}) : null;
  meta.chunks.forEach(function (c, i) {
    var sec = el("section", "chunk pending");
    sec.dataset.chunk = i;
    var b = el("button", null, "load " + (c.turns ? "turns " + c.turn0 + "–" + c.turn1 : c.items +
      " item(s)") + " (" + clock(c.t0) + " – " + clock(c.t1) + ")");
    b.type = "button";
    b.addEventListener("click", function () { show(i); });
    sec.appendChild(b);
    sec.style.minHeight = Math.min(200000, 24 * c.items + 60 * c.turns) + "px";
    timeline.appendChild(sec);
    sections.push(sec);
  });
  if (!meta.chunks.length) timeline.appendChild(el("p", "note", "nothing recorded for this run"));

  function focus(node) {
    var old = document.querySelector(".item.target");
    if (old) old.classList.remove("target");
    node.classList.add("target");
    node.scrollIntoView({block: "start"});
  }
  function goTime(t) {
    var i = 0;
    meta.chunks.forEach(function (c, k) { if (c.t0 <= t) i = k; });
    function tryFrom(k) {
      if (k >= meta.chunks.length) return;
      show(k).then(function () {
        var nodes = sections[k].querySelectorAll(".item");
        for (var n = 0; n < nodes.length; n++)
          if (Number(nodes[n].dataset.t) >= t - 0.005) { focus(nodes[n]); return; }
        tryFrom(k + 1);
      });
    }
    tryFrom(i);
  }
  function goTurn(n) {
    var i = -1;
    meta.chunks.forEach(function (c, k) {
      if (c.turns && c.turn0 <= n && n <= c.turn1) i = k;
    });
    if (i < 0) return;
    show(i).then(function () {
      var node = document.getElementById("turn-" + n);
      if (node) focus(node);
    });
  }
  function goItem(i, j) {
    if (i >= meta.chunks.length) return;
    show(i).then(function () {
      var node = document.getElementById("item-" + i + "-" + j) ||
        sections[i].querySelectorAll(".item")[j];
      if (node) focus(node);
    });
  }
  function route() {
    var h = decodeURIComponent(location.hash.slice(1)), m;
    if ((m = /^t=(-?[0-9.]+)$/.exec(h))) goTime(Number(m[1]));
    else if ((m = /^turn-([0-9]+)$/.exec(h))) goTurn(Number(m[1]));
    else if ((m = /^item-([0-9]+)-([0-9]+)$/.exec(h))) goItem(Number(m[1]), Number(m[2]));
    else if (meta.chunks.length) show(0);
  }
  window.addEventListener("hashchange", route);

  // Search: every chunk loaded, then each item's text fields matched (case-insensitive).
  function strings(obj, out) {
    if (obj === null || obj === undefined) return out;
    if (typeof obj === "object") { for (var k in obj) strings(obj[k], out); }
    else if (typeof obj === "string") out.push(obj);
    return out;
  }
  var results = document.getElementById("traj-results");
  var status = document.getElementById("traj-search-status");
  document.getElementById("traj-search").addEventListener("submit", function (ev) {
    ev.preventDefault();
    var q = document.getElementById("traj-q").value.trim().toLowerCase();
    results.textContent = "";
    if (!q) { status.textContent = ""; return; }
    status.textContent = "searching…";
    loadAll().then(function () {
      var hits = 0;
      meta.chunks.forEach(function (_c, i) {
        data[i].forEach(function (item, j) {
          var text = strings(item, []).join("\n");
          var at = text.toLowerCase().indexOf(q);
          if (at < 0) return;
          hits++;
          if (hits > 500) return;
          var li = el("li", "hit");
          var a = el("a", null, clock(item.t) + " " + (item.k === "turn" ? "turn " + item.n : item.k));
          a.href = "#item-" + i + "-" + j;
          li.appendChild(a);
          li.appendChild(el("span", "snippet", " " + text.slice(Math.max(0, at - 60), at + q.length + 100)
            .replace(/\s+/g, " ")));
          results.appendChild(li);
        });
      });
      status.textContent = hits + " match(es)" + (hits > 500 ? ", the first 500 listed" : "");
    }, function (err) { status.textContent = String(err.message || err); });
  });

  // Draws every chunk (for a reader who wants the whole run on one page, and tests).
  function drawAll() {
    return loadAll().then(function () { meta.chunks.forEach(function (_c, i) { draw(i); }); });
  }
  window.A2RLTrajectory = {register: files.register, anchorFor: anchorFor, load: load, show: show,
                           loadAll: loadAll, drawAll: drawAll, meta: meta};
  route();
  if (observer) sections.forEach(function (sec) { observer.observe(sec); });
})();
