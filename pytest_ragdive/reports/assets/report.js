(function () {
  "use strict";
  var verdict = document.getElementById("verdict-filter");
  var suite = document.getElementById("suite-filter");
  var shown = document.getElementById("conv-shown");
  var convs = document.querySelectorAll("details.conv, li.conv-line");
  function apply() {
    var v = verdict ? verdict.value : "all";
    var s = suite ? suite.value : "all";
    var n = 0;
    for (var i = 0; i < convs.length; i++) {
      var d = convs[i];
      var show = (v === "all" || d.getAttribute("data-verdict") === v) &&
                 (s === "all" || d.getAttribute("data-suite") === s);
      d.hidden = !show;
      if (show) { n++; }
    }
    if (shown) { shown.textContent = String(n); }
    document.body.setAttribute("data-filter", v);
  }
  function toggle(open) {
    for (var i = 0; i < convs.length; i++) {
      if (!convs[i].hidden && convs[i].tagName === "DETAILS") { convs[i].open = open; }
    }
  }
  // a link to a conversation (#conv-...) opens it, shown whatever the filter
  function reveal() {
    var h = window.location.hash;
    if (h.indexOf("#conv-") !== 0) { return; }
    var d = document.getElementById(h.slice(1));
    if (d && d.tagName === "DETAILS") {
      d.hidden = false;
      d.open = true;
      d.scrollIntoView();
    }
  }
  if (verdict) { verdict.addEventListener("change", apply); }
  if (suite) { suite.addEventListener("change", apply); }
  var ex = document.getElementById("expand-all");
  var co = document.getElementById("collapse-all");
  if (ex) { ex.addEventListener("click", function () { toggle(true); }); }
  if (co) { co.addEventListener("click", function () { toggle(false); }); }
  window.addEventListener("hashchange", reveal);
  // report.html#verdict=below_band opens the report filtered
  var m = /verdict=([a-z_]+)/.exec(window.location.hash);
  if (m && verdict) {
    for (var j = 0; j < verdict.options.length; j++) {
      if (verdict.options[j].value === m[1]) { verdict.value = m[1]; }
    }
  }
  apply();
  reveal();
})();
