/* /ops/: keep the figures fresh without reloading the page under the operator.
 *
 * Every minute, while "Update every minute" is ticked and the tab is visible, the page is
 * fetched again and only its figures (.ops) are swapped in; the "as of" time says when. Nothing
 * is swapped while focus is inside the figures (a keyboard user would lose their place), and the
 * box pauses it for as long as the operator wants. Without JavaScript, "Refresh now" reloads.
 * An alarm that appears arrives in an element with role="alert" and is announced by itself.
 */
"use strict";

(function () {
  const EVERY_MS = 60_000;

  async function update() {
    const auto = document.getElementById("ops-auto");
    const figures = document.querySelector(".ops");
    if (!auto || !auto.checked || !figures || document.visibilityState !== "visible") return;
    if (figures.contains(document.activeElement)) return;
    try {
      const response = await fetch(window.location.href, {
        credentials: "same-origin",
        headers: { Accept: "text/html" },
      });
      if (!response.ok) return;
      const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
      const next = fresh.querySelector(".ops");
      const asOf = fresh.getElementById("ops-as-of");
      if (!next) return;
      figures.replaceChildren(...next.childNodes);
      if (asOf) document.getElementById("ops-as-of").textContent = asOf.textContent;
    } catch (err) {
      // Offline for a moment: the next round tries again; the figures say when they are from.
    }
  }

  function init() {
    const label = document.getElementById("ops-auto-label");
    if (label) label.hidden = false;
    setInterval(update, EVERY_MS);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
