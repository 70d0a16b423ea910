/* roofline's HTML report: sorting, filtering, the chart's tooltip and the point <-> row link.
   Hand written, no framework; works on every .rl block of the document (a page, or each
   Jupyter output), once each. Without JavaScript the page still reads: the tables are in
   order and every point keeps its <title>. */
(function () {
  "use strict";
  function init(root) {
    if (root.dataset.ready) return;
    root.dataset.ready = "1";
    var tip = root.querySelector(".tip");
    var points = {};
    root.querySelectorAll("svg").forEach(function (chart) {
      var all = Array.prototype.slice.call(chart.querySelectorAll(".pt"));
      all.forEach(function (pt) {
        var x = parseFloat(pt.getAttribute("cx") || pt.getAttribute("x"));
        var y = parseFloat(pt.getAttribute("cy") || pt.getAttribute("y"));
        if (pt.hasAttribute("points")) { /* a diamond or triangle (a plan's): its box's middle */
          var box = pt.getBBox();
          x = box.x + box.width / 2;
          y = box.y + box.height / 2;
        } else if (!pt.hasAttribute("cx")) { /* a square: its middle */
          x += parseFloat(pt.getAttribute("width")) / 2;
          y += parseFloat(pt.getAttribute("height")) / 2;
        }
        pt.rlAt = [x, y];
        pt.rlChart = all;
      });
    });
    root.querySelectorAll(".pt").forEach(function (pt) {
      var title = pt.querySelector("title");
      pt.dataset.tip = title ? title.textContent : "";
      if (title) pt.removeChild(title); /* the custom tooltip replaces the native one */
      pt.setAttribute("aria-label", pt.dataset.tip);
      (points[pt.dataset.r] = points[pt.dataset.r] || []).push(pt);
      pt.addEventListener("mouseenter", function (e) { show(pt, e.clientX, e.clientY); });
      pt.addEventListener("mousemove", function (e) { place(e.clientX, e.clientY); });
      pt.addEventListener("mouseleave", hide);
      pt.addEventListener("click", function () { go(pt.dataset.r); });
    });
    function show(pt, x, y) {
      if (!tip) return;
      var others = near(pt);
      var text = pt.dataset.tip;
      others.slice(0, 3).forEach(function (o) { text += "\n\n" + o.dataset.tip; });
      if (others.length > 3) text += "\n\n+" + (others.length - 3) + " more at this point";
      tip.textContent = text;
      tip.hidden = false;
      place(x, y);
    }
    function near(pt) {
      /* the points drawn on or beside this one (coincident GEMMs): one tooltip names them */
      var found = [];
      (pt.rlChart || []).forEach(function (o) {
        var dx = o.rlAt[0] - pt.rlAt[0], dy = o.rlAt[1] - pt.rlAt[1];
        var d = dx * dx + dy * dy;
        if (o !== pt && d <= 64) found.push([d, o]);
      });
      found.sort(function (a, b) { return a[0] - b[0]; });
      return found.map(function (f) { return f[1]; });
    }
    function place(x, y) {
      if (!tip || tip.hidden) return;
      var w = tip.offsetWidth, h = tip.offsetHeight;
      var left = x + 14 + w > window.innerWidth ? x - 14 - w : x + 14;
      var top = y + 14 + h > window.innerHeight ? y - 14 - h : y + 14;
      tip.style.left = Math.max(0, left) + "px";
      tip.style.top = Math.max(0, top) + "px";
    }
    function hide() { if (tip) tip.hidden = true; }
    function light(id, on) {
      (points[id] || []).forEach(function (pt) {
        pt.classList.toggle("hl", on);
        if (on) pt.parentNode.appendChild(pt); /* drawn last: on top of its neighbours */
      });
    }
    function go(id) {
      var row = document.getElementById(id);
      if (!row) return;
      if (row.hidden) {
        var owner = row.closest("table");
        if (owner && owner.rlClear) owner.rlClear();
      }
      row.scrollIntoView({block: "center"});
      row.focus({preventScroll: true});
    }
    root.querySelectorAll("tbody tr[id]").forEach(function (row) {
      row.addEventListener("focus", function () {
        light(row.id, true);
        var pt = (points[row.id] || [])[0];
        if (pt) {
          var box = pt.getBoundingClientRect();
          show(pt, box.left + box.width / 2, box.top + box.height / 2);
        }
      });
      row.addEventListener("blur", function () { light(row.id, false); hide(); });
      row.addEventListener("mouseenter", function () { light(row.id, true); });
      row.addEventListener("mouseleave", function () {
        if (document.activeElement !== row) light(row.id, false);
      });
    });
    root.querySelectorAll("table.sortable").forEach(sortable);
    root.querySelectorAll(".controls").forEach(function (controls) {
      var table = controls.parentNode.querySelector("table.filterable");
      if (!table) return;
      var fields = controls.querySelectorAll("input,select");
      function value(name) {
        var f = controls.querySelector("[name=" + name + "]");
        return f ? f.value : "";
      }
      function filter() {
        var layer = value("layer").toLowerCase(), bound = value("bound"), kind = value("kind");
        var shown = 0, rows = table.tBodies[0].rows;
        for (var i = 0; i < rows.length; i++) {
          var r = rows[i];
          var ok = (!layer || (r.dataset.layer || "").toLowerCase().indexOf(layer) >= 0) &&
            (!bound || r.dataset.bound === bound) && (!kind || r.dataset.kind === kind);
          r.hidden = !ok;
          shown += ok ? 1 : 0;
          (points[r.id] || []).forEach(function (pt) { pt.classList.toggle("off", !ok); });
        }
        var count = controls.querySelector(".count");
        if (count) count.textContent = shown + " of " + rows.length + " rows";
      }
      fields.forEach(function (f) { f.addEventListener("input", filter); });
      table.rlClear = function () {
        fields.forEach(function (f) { f.value = ""; });
        filter();
      };
    });
  }
  function sortable(table) {
    var heads = table.tHead.rows[0].cells;
    var body = table.tBodies[0];
    /* each row's place as printed: ties keep it, whatever was sorted before */
    Array.prototype.forEach.call(body.rows, function (r, i) { r.rlOrder = i; });
    Array.prototype.forEach.call(heads, function (th, col) {
      var button = th.querySelector("button");
      if (!button) return;
      button.addEventListener("click", function () {
        var up = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", up ? "ascending" : "descending");
        var rows = Array.prototype.slice.call(body.rows);
        var numeric = th.dataset.type === "num";
        rows.sort(function (a, b) {
          var x = key(a.cells[col], numeric), y = key(b.cells[col], numeric);
          var d;
          if (x === null || y === null) d = x === y ? 0 : x === null ? 1 : -1; /* none: last */
          else {
            d = numeric ? (x < y ? -1 : x > y ? 1 : 0)
              : x.localeCompare(y, undefined, {numeric: true});
            if (!up) d = -d;
          }
          return d || a.rlOrder - b.rlOrder;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  }
  function key(cell, numeric) {
    /* a cell's sort key: its data-v, else its text; null where it has none (blank, or "-"
       as the tables write a missing value, or a number column's cell that is no number) */
    var v = cell.dataset.v !== undefined ? cell.dataset.v : cell.textContent.trim();
    if (v === "" || v === "-" || v === "\u2013" || v === "\u2014") return null;
    if (!numeric) return v;
    var n = Number(v);
    return isNaN(n) ? null : n;
  }
  document.querySelectorAll(".rl").forEach(init);
})();
