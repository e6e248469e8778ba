// A table wider than its panel scrolls inside its .rc-table-wrap (static/ui/components.css),
// never the whole page. While it scrolls, the wrap is a named region in the tab order, so a
// keyboard user can scroll it too (WCAG 2.1.1; axe scrollable-region-focusable); when it fits
// again it leaves the tab order. No inline script: CSP-ready.
(function () {
  "use strict";
  function nameOf(table) {
    if (!table) return "Table";
    var caption = table.querySelector("caption");
    return table.getAttribute("aria-label") ||
      (caption && caption.textContent.trim()) || "Table";
  }
  function mark() {
    var wraps = document.querySelectorAll(".rc-table-wrap");
    for (var i = 0; i < wraps.length; i++) {
      var wrap = wraps[i];
      var scrolls = wrap.scrollWidth > wrap.clientWidth + 1;
      if (scrolls && !wrap.hasAttribute("tabindex")) {
        var table = wrap.querySelector("table");
        wrap.tabIndex = 0;
        wrap.setAttribute("role", "region");
        wrap.setAttribute("data-rc-scrolls", "");
        if (table && table.getAttribute("aria-labelledby")) {
          wrap.setAttribute("aria-labelledby", table.getAttribute("aria-labelledby"));
        } else {
          wrap.setAttribute("aria-label", nameOf(table));
        }
      } else if (!scrolls && wrap.hasAttribute("data-rc-scrolls")) {
        ["tabindex", "role", "data-rc-scrolls", "aria-label", "aria-labelledby"].forEach(
          function (a) { wrap.removeAttribute(a); });
      }
    }
  }
  var pending = 0;
  function later() { cancelAnimationFrame(pending); pending = requestAnimationFrame(mark); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mark);
  else mark();
  window.addEventListener("resize", later);
})();
