/* Review Console: reveal blurred images of a sensitive queue, one at a time.
 *
 * Each "Reveal image" button is a form that works without JavaScript (the server records the
 * reveal and sends the page back with that image shown). Here the same POST is sent in the
 * background, the image is unblurred in place, focus moves to it and the reveal is announced.
 * "v" reveals the next blurred image. No inline script: loaded as a file (CSP).
 */
"use strict";

(function () {
  function announce(text) {
    const region = document.getElementById("console-announcer");
    if (region) region.textContent = text;
  }

  async function reveal(form) {
    const item = form.closest(".attachment");
    const token = form.querySelector("input[name=csrfmiddlewaretoken]");
    const button = form.querySelector("button");
    if (button) button.disabled = true;
    try {
      const response = await fetch(form.action, {
        method: "POST",
        body: new FormData(form),
        credentials: "same-origin",
        headers: { Accept: "application/json", "X-CSRFToken": token ? token.value : "" },
      });
      const data = await response.json().catch(() => ({}));
      if (!response.ok || !data.ok) throw new Error("refused");
      const link = item.querySelector(".attachment-image-link");
      const img = item.querySelector("img");
      link.classList.remove("veiled");
      link.removeAttribute("tabindex");
      link.removeAttribute("aria-hidden");
      img.alt = data.name;
      form.remove();
      // From the viewer (viewer.js) focus stays in the viewer, which unveils on this event.
      if (!document.querySelector("dialog.viewer[open]")) item.querySelector("figure").focus();
      document.dispatchEvent(new CustomEvent("attachment-revealed", { detail: { sha256: item.dataset.sha256 } }));
      announce(`Image ${data.name} revealed.`);
    } catch (err) {
      // Let the server answer the plain form post (it says why, or records the reveal).
      form.submit();
    }
  }

  function onKey(event) {
    if (event.key !== "v" || event.ctrlKey || event.metaKey || event.altKey) return;
    const t = event.target;
    if (t instanceof Element && (t.isContentEditable || ["TEXTAREA", "INPUT", "SELECT"].includes(t.tagName))) {
      if (!(t.tagName === "INPUT" && ["radio", "checkbox", "submit", "button"].includes(t.type))) return;
    }
    const dialog = document.getElementById("shortcut-help");
    if (dialog && dialog.open) return;
    const form = document.querySelector(".reveal-form");
    if (!form) return;
    event.preventDefault();
    reveal(form);
  }

  function init() {
    for (const form of document.querySelectorAll(".reveal-form")) {
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        reveal(form);
      });
    }
    document.addEventListener("keydown", onKey);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
