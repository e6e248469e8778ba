/* Review Console: the document viewer. Opens an item's images and PDFs in a dialog with zoom,
 * rotate, and previous/next across the item's documents.
 *
 * A PDF is shown as its pages, pictures the server drew (the console's page route); no PDF code
 * runs here. A veiled image (a sensitive queue) stays veiled in the viewer until revealed: the
 * Reveal button, or v, submits the card's own reveal form, so the reveal is recorded exactly as
 * from the card (static/console/attachments.js), and the viewer unveils when that says so.
 * Keys work while the viewer is open and go no further (a viewer's r rotates, never rejects).
 * No inline script: loaded as a file (CSP).
 */
"use strict";

(function () {
  const ZOOM_STEPS = [0.25, 0.5, 0.75, 1, 1.5, 2, 3, 4];
  const PDF_PAGE_SCALE = "2"; // sharper than the card's thumbnail; one of the server's steps

  let dialog = null;
  let stage = null;
  let cards = [];
  let index = 0;
  let zoom = 1; // 1 = fit
  let rotation = 0;
  let opener = null;

  function announce(text) {
    const region = document.getElementById("console-announcer");
    if (region) region.textContent = text;
  }

  function current() {
    return cards[index];
  }

  function isVeiled(card) {
    const link = card.querySelector(".attachment-image-link");
    return Boolean(link && link.classList.contains("veiled"));
  }

  function sources(card) {
    if (card.dataset.kind === "image") return [card.dataset.src];
    return (card.dataset.pages || "")
      .split(" ")
      .filter(Boolean)
      .map((url) => `${url}?scale=${PDF_PAGE_SCALE}`);
  }

  /* Lay each page out at the zoom and rotation: a quarter turn swaps the box it needs. */
  function layout() {
    const card = current();
    if (!card) return;
    const quarter = rotation % 180 !== 0;
    const room = { w: Math.max(stage.clientWidth - 32, 50), h: Math.max(stage.clientHeight - 32, 50) };
    for (const page of stage.querySelectorAll(".viewer-page")) {
      const img = page.querySelector("img");
      const natural = { w: img.naturalWidth || 600, h: img.naturalHeight || 800 };
      const turned = quarter ? { w: natural.h, h: natural.w } : natural;
      // An image fits whole; a document's pages fit the width and scroll.
      const fit =
        card.dataset.kind === "image"
          ? Math.min(room.w / turned.w, room.h / turned.h, 1)
          : Math.min(room.w / turned.w, 1.5);
      const scale = fit * zoom;
      const w = Math.round(natural.w * scale);
      const h = Math.round(natural.h * scale);
      img.style.width = `${w}px`;
      img.style.height = `${h}px`;
      img.style.transform = `translate(-50%, -50%) rotate(${rotation}deg)`;
      page.style.width = `${quarter ? h : w}px`;
      page.style.height = `${quarter ? w : h}px`;
    }
    document.getElementById("viewer-zoom").textContent =
      zoom === 1 ? "Fit" : `Zoom ${Math.round(zoom * 100)}% of fit`;
    dialog.dataset.zoom = String(zoom);
    dialog.dataset.rotation = String(rotation);
  }

  function showVeil(card) {
    const veiled = isVeiled(card);
    stage.classList.toggle("veiled", veiled);
    const button = dialog.querySelector(".viewer-reveal");
    if (button) button.hidden = !veiled;
    for (const img of stage.querySelectorAll("img")) {
      img.alt = veiled ? `${card.dataset.name} (blurred until revealed)` : img.dataset.label;
    }
  }

  function render() {
    const card = current();
    const urls = sources(card);
    stage.replaceChildren();
    urls.forEach((url, n) => {
      const page = document.createElement("div");
      page.className = "viewer-page";
      const img = document.createElement("img");
      img.dataset.label =
        card.dataset.kind === "image" ? card.dataset.name : `${card.dataset.name}, page ${n + 1} of ${urls.length}`;
      img.alt = img.dataset.label;
      img.decoding = "async";
      if (n > 1) img.loading = "lazy";
      img.addEventListener("load", layout);
      img.src = url;
      page.appendChild(img);
      stage.appendChild(page);
    });
    stage.dataset.kind = card.dataset.kind;
    stage.setAttribute("aria-label", card.dataset.name);
    const kind = card.dataset.kind === "image" ? "image" : `PDF, ${urls.length} page${urls.length === 1 ? "" : "s"}`;
    document.getElementById("viewer-position").textContent =
      `${index + 1} of ${cards.length}: ${card.dataset.name} (${kind})`;
    const alone = cards.length < 2;
    dialog.querySelector("[data-action=previous]").disabled = alone;
    dialog.querySelector("[data-action=next]").disabled = alone;
    showVeil(card);
    layout();
    stage.scrollTo(0, 0);
  }

  function go(step) {
    if (cards.length < 2) return;
    index = (index + step + cards.length) % cards.length;
    zoom = 1;
    rotation = 0;
    render();
    announce(document.getElementById("viewer-position").textContent);
  }

  function setZoom(next) {
    zoom = next;
    layout();
    announce(document.getElementById("viewer-zoom").textContent);
  }

  function zoomBy(direction) {
    const at = ZOOM_STEPS.findIndex((step) => step >= zoom - 1e-9);
    const from = at === -1 ? ZOOM_STEPS.length - 1 : at;
    const to = Math.min(Math.max(from + direction, 0), ZOOM_STEPS.length - 1);
    setZoom(ZOOM_STEPS[to]);
  }

  function rotate() {
    rotation = (rotation + 90) % 360;
    layout();
    announce(`Rotated to ${rotation} degrees.`);
  }

  function reveal() {
    const form = current().querySelector(".reveal-form");
    if (form) form.requestSubmit();
  }

  function act(action) {
    if (action === "previous") go(-1);
    else if (action === "next") go(1);
    else if (action === "zoom-in") zoomBy(1);
    else if (action === "zoom-out") zoomBy(-1);
    else if (action === "fit") setZoom(1);
    else if (action === "rotate") rotate();
    else if (action === "reveal") reveal();
    else if (action === "close") dialog.close();
  }

  function onKey(event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    const key = event.key;
    // The help dialog (?) may open over the viewer; Escape is the dialog's own (it closes).
    if (key === "?" || key === "Escape") return;
    event.stopPropagation();
    let action = null;
    if (key === "+" || key === "=") action = "zoom-in";
    else if (key === "-") action = "zoom-out";
    else if (key === "0") action = "fit";
    else if (key === "r") action = "rotate";
    else if (key === "[" || key === "ArrowLeft") action = "previous";
    else if (key === "]" || key === "ArrowRight") action = "next";
    else if (key === "v" && isVeiled(current())) action = "reveal";
    if (!action) return;
    event.preventDefault();
    act(action);
  }

  function open(card, button) {
    cards = Array.from(document.querySelectorAll(".attachment-list .attachment")).filter(
      (c) => c.querySelector(".viewer-open")
    );
    index = Math.max(cards.indexOf(card), 0);
    zoom = 1;
    rotation = 0;
    opener = button;
    dialog.showModal();
    render();
    stage.focus();
  }

  function init() {
    dialog = document.getElementById("attachment-viewer");
    if (!dialog) return;
    stage = document.getElementById("viewer-stage");
    for (const button of document.querySelectorAll(".viewer-open")) {
      button.hidden = false;
      button.addEventListener("click", () => open(button.closest(".attachment"), button));
    }
    for (const button of dialog.querySelectorAll("[data-action]")) {
      button.addEventListener("click", () => act(button.dataset.action));
    }
    dialog.addEventListener("keydown", onKey);
    dialog.addEventListener("close", () => {
      stage.replaceChildren();
      if (opener && opener.isConnected) opener.focus();
    });
    // The card's reveal finished (attachments.js): unveil here too, and say so.
    document.addEventListener("attachment-revealed", (event) => {
      if (dialog.open && current() && current().dataset.sha256 === event.detail.sha256) {
        showVeil(current());
        stage.focus();
      }
    });
    window.addEventListener("resize", () => {
      if (dialog.open) layout();
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
