/* Review Console, second-person lanes: single-key shortcuts on check, QA and adjudication pages.
 *
 * c confirm, t return (focuses the note, which a return requires), a / r choose the QA verdict,
 * u / o uphold or overturn. n (next in this lane), s (release) and ? (help) are console.js's.
 * Keys are ignored while typing; Escape leaves the note.
 */
(function () {
  "use strict";

  function typing(target) {
    return target && (target.tagName === "TEXTAREA" || target.tagName === "SELECT" ||
      (target.tagName === "INPUT" && !["radio", "checkbox", "submit", "button", "hidden"].includes(target.type)));
  }

  function pick(id) {
    const radio = document.getElementById(id);
    if (radio) {
      radio.checked = true;
      radio.dispatchEvent(new Event("change", { bubbles: true }));
      return true;
    }
    return false;
  }

  function onKey(event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    if (typing(event.target)) return;
    const dialog = document.getElementById("shortcut-help");
    if (dialog && dialog.open) return;
    const key = event.key;
    let handled = false;
    if (key === "c") {
      const form = document.getElementById("confirm-form");
      // Not once the heartbeat found the task is someone else's (console.js disabled it).
      if (form && form.dataset.refused !== "true") { form.requestSubmit(); handled = true; }
    } else if (key === "t") {
      const note = document.querySelector("#return-form textarea");
      if (note) { note.focus(); handled = true; }
    } else if (key === "a" || key === "r") {
      handled = pick(key === "a" ? "verdict-approve" : "verdict-reject");
      if (handled) document.getElementById("id_reason_code").focus();
    } else if (key === "u") {
      handled = pick("outcome-uphold");
    } else if (key === "o") {
      handled = pick("outcome-overturn");
      if (handled) document.getElementById("id_reason_code").focus();
    }
    if (handled) event.preventDefault();
  }

  function filterReasons() {
    const form = document.getElementById("qa-form");
    if (!form) return;
    const chosen = form.querySelector("input[name=verdict]:checked");
    for (const group of form.querySelectorAll("optgroup")) {
      group.hidden = Boolean(chosen) && group.dataset.verdict !== chosen.value;
    }
    const select = form.elements.reason_code;
    const option = select.selectedOptions[0];
    if (chosen && option && option.dataset.verdict && option.dataset.verdict !== chosen.value) {
      select.value = "";
    }
  }

  function init() {
    document.addEventListener("keydown", onKey);
    const form = document.getElementById("qa-form");
    if (form) {
      for (const radio of form.querySelectorAll("input[name=verdict]")) {
        radio.addEventListener("change", filterReasons);
      }
    }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
