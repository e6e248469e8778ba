/* Review Console: lease heartbeat, reason filtering, keyboard shortcuts.
 *
 * Everything here is an aid: without JavaScript the forms post as usual and the server
 * enforces every rule (fence, evidence hash, reason codes). Data comes in through data-
 * attributes so the page needs no inline script (CSP).
 */
"use strict";

(function () {
  const VERDICT_KEYS = { a: "approve", r: "reject", e: "escalate" };

  function csrfToken(form) {
    const input = form.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  /* Say something once, politely, through the page's status region (not a ticking clock). */
  function announce(text) {
    const region = document.getElementById("console-announcer");
    if (region) region.textContent = text;
  }

  // Lease time left worth saying out loud, in seconds: once each, as it is crossed. A lane
  // task's page (data-lease-of="task") says "task" where an item's says "item".
  function leaseAnnouncements(noun) {
    const last =
      noun === "task"
        ? "Your lease has run out: finish now or release the task; anyone in this lane may take it."
        : "Your lease has run out: decide now or release the item; anyone may take it.";
    return [
      [300, `5 minutes left on your lease of this ${noun}.`],
      [120, `2 minutes left on your lease of this ${noun}.`],
      [60, `1 minute left on your lease of this ${noun}.`],
      [0, last],
    ];
  }

  function formatSeconds(total) {
    total = Math.max(0, Math.floor(total));
    const h = Math.floor(total / 3600);
    const m = Math.floor((total % 3600) / 60);
    const s = String(total % 60).padStart(2, "0");
    return h ? `${h}:${String(m).padStart(2, "0")}:${s}` : `${m}:${s}`;
  }

  /* The stale banner: role="alert", announced at once, the one assertive message the page makes. */
  function showBanner(message) {
    const banner = document.getElementById("stale-banner");
    if (banner) {
      banner.textContent = message;
      banner.hidden = false;
    }
  }

  /* Stop every write from this page: someone else holds the item (or task) now. */
  function refuse(message, noun) {
    showBanner(message);
    // Every form that writes under the lease (it carries the token): decide, release, and a
    // lane's confirm, return, QA review and adjudication.
    for (const form of document.querySelectorAll("form")) {
      if (!form.elements.lease_token) continue;
      form.dataset.refused = "true";
      for (const el of form.elements) el.disabled = true;
    }
    const status = document.getElementById("lease-status");
    if (status) {
      status.classList.add("expired");
      status.textContent = `This ${noun} is no longer yours.`;
    }
  }

  /* The page can no longer renew its lease, though it may still hold it: say why and how to
   * go on, and leave the forms as they are (the server judges whatever is sent). */
  function mustReload(noun) {
    showBanner(
      `This page can no longer keep your lease of this ${noun}: you were signed out, or ` +
        "signed in again in another tab. Reload the page to go on.",
    );
  }

  /* Renew the lease while the page is visible, at half the time left (at most half the TTL). */
  function startHeartbeat(form) {
    const url = form.dataset.renewUrl;
    const ttl = Number(form.dataset.ttl) || 60;
    const noun = form.dataset.leaseOf || "item";
    const LEASE_ANNOUNCEMENTS = leaseAnnouncements(noun);
    let countdown = document.getElementById("lease-countdown");
    let expiresAt = Date.now() + Number(form.dataset.expiresIn) * 1000;
    let timer = null;
    let stopped = false;
    let inFlight = false;

    function schedule() {
      clearTimeout(timer);
      if (stopped) return;
      const left = expiresAt - Date.now();
      const delay = Math.max(1000, Math.min(left / 2, (ttl * 1000) / 2));
      timer = setTimeout(renew, delay);
    }

    async function renew() {
      if (stopped || inFlight) return;
      // A hidden tab lets its lease run out on purpose: the reviewer has walked away.
      if (document.visibilityState !== "visible") return;
      inFlight = true;
      const body = new FormData();
      body.append("lease_token", form.elements.lease_token.value);
      try {
        const response = await fetch(url, {
          method: "POST",
          body,
          credentials: "same-origin",
          headers: { Accept: "application/json", "X-CSRFToken": csrfToken(form) },
        });
        // Only the heartbeat's own answers are JSON. Anything else came from in front of it:
        // the login page (the session ended) or the CSRF refusal (this page's token is stale,
        // after signing in again in another tab). The lease may well still be ours then.
        const json = (response.headers.get("Content-Type") || "").startsWith("application/json");
        const data = json ? await response.json().catch(() => ({})) : {};
        if (response.ok && data.ok) {
          expiresAt = Date.now() + Number(data.expires_in) * 1000;
          if (!countdown) countdown = showCountdown();
        } else if (!json && (response.redirected || response.status === 403)) {
          stopped = true;
          mustReload(noun);
        } else if ([403, 404, 409].includes(response.status)) {
          stopped = true;
          refuse(
            data.message || `This ${noun} is no longer yours; nothing you submit here would be recorded.`,
            noun,
          );
        }
      } catch (err) {
        // Network trouble: try again at the next tick; the server still fences every write.
      } finally {
        inFlight = false;
      }
      schedule();
    }

    /* A lapsed lease nobody took was renewed: say it is ours again, with its countdown. */
    function showCountdown() {
      const status = document.getElementById("lease-status");
      if (!status) return null;
      const strong = document.createElement("strong");
      const span = document.createElement("span");
      span.id = "lease-countdown";
      strong.append(span);
      status.classList.remove("expired");
      status.replaceChildren("Yours for ", strong, " (renewed automatically while this page is open)");
      return span;
    }

    // Thresholds already behind us when the page opened are not announced.
    let announced = LEASE_ANNOUNCEMENTS.filter(([at]) => (expiresAt - Date.now()) / 1000 <= at).length;

    function tick() {
      if (stopped || !countdown) return;
      const left = (expiresAt - Date.now()) / 1000;
      countdown.textContent = formatSeconds(left);
      // A renewal moves expiresAt forward: thresholds ahead of us again may be said again.
      announced = Math.min(announced, LEASE_ANNOUNCEMENTS.filter(([at]) => left <= at).length);
      while (announced < LEASE_ANNOUNCEMENTS.length && left <= LEASE_ANNOUNCEMENTS[announced][0]) {
        announce(LEASE_ANNOUNCEMENTS[announced][1]);
        announced += 1;
      }
    }

    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") renew();
    });
    setInterval(tick, 1000);
    if (expiresAt <= Date.now()) renew();
    else schedule();
  }

  /* Offer only the reasons of the chosen verdict (the server checks again regardless). */
  function filterReasons(form) {
    const select = form.elements.reason_code;
    const checked = form.querySelector("input[name=verdict]:checked");
    const verdict = checked ? checked.value : null;
    if (!select) return;
    for (const group of select.querySelectorAll("optgroup")) {
      const show = !verdict || group.dataset.verdict === verdict;
      group.hidden = !show;
      group.disabled = !show;
    }
    const current = select.selectedOptions[0];
    if (verdict && (!current || current.dataset.verdict !== verdict)) {
      // Never guess: reasons of one verdict can differ in consequence (a sanctions match is
      // not an expired document). Only a reason the queue marked as its safe default is
      // filled in, and not even that while the evidence rules warn: a default is safe for
      // clean evidence, and two keys must not approve over a red flag.
      const safe = form.dataset.warnings
        ? null
        : select.querySelector(`option[data-verdict="${verdict}"][data-default]`);
      select.value = safe ? safe.value : "";
    }
    showMissingReason(form, false);
  }

  /* Say, next to the list, that a reason has to be chosen (nothing is submitted). */
  function showMissingReason(form, show) {
    const note = document.getElementById("reason-missing");
    if (note) note.hidden = !show;
    if (show) form.elements.reason_code.focus();
  }

  function chooseVerdict(form, verdict) {
    const radio = form.querySelector(`input[name=verdict][value="${verdict}"]`);
    if (!radio || radio.disabled) return;
    radio.checked = true;
    filterReasons(form);
    revealAfterChoice(form);
    form.elements.reason_code.focus();
  }

  /* The machine suggestion on request (console/_suggestion.html): asked for with the button or
   * its key, or shown once the reviewer has chosen a verdict. The server records the reveal
   * under the lease and answers with what to show and a signed record of it, which the decision
   * form carries back; nothing in the form is chosen from the suggestion. */
  let pendingReveal = null;

  function fillSuggestion(suggestion) {
    const panel = document.getElementById("suggestion-panel");
    if (!panel) return;
    const verdict = document.getElementById("suggestion-verdict");
    verdict.textContent = suggestion.verdict;
    verdict.className = `verdict-${suggestion.verdict}`;
    document.getElementById("suggestion-reason").textContent = suggestion.reason_label;
    document.getElementById("suggestion-confidence").textContent = suggestion.confidence;
    document.getElementById("suggestion-model").textContent =
      `${suggestion.model.name} ${suggestion.model.version}`;
    const table = document.getElementById("suggestion-explanation");
    const rows = (suggestion.explanation || []).map((factor) => {
      const row = document.createElement("tr");
      for (const text of [factor.factor, String(factor.value)]) {
        const cell = document.createElement("td");
        cell.textContent = text;
        row.append(cell);
      }
      return row;
    });
    table.tBodies[0].replaceChildren(...rows);
    table.hidden = rows.length === 0;
    panel.hidden = false;
  }

  function revealSuggestion(chosen) {
    const asker = document.getElementById("suggestion-reveal-form");
    const form = document.getElementById("decision-form");
    if (!asker || pendingReveal || asker.dataset.refused === "true") return pendingReveal;
    const body = new FormData(asker);
    body.set("chosen_verdict", chosen || "");
    pendingReveal = fetch(asker.action, {
      method: "POST",
      body,
      credentials: "same-origin",
      headers: { Accept: "application/json", "X-CSRFToken": csrfToken(asker) },
    })
      .then((response) => (response.ok ? response.json() : null))
      .then((data) => {
        if (!data || !data.ok) return;
        fillSuggestion(data.suggestion);
        asker.remove();
        if (form) {
          let seen = form.elements.suggestion_seen;
          if (!seen) {
            seen = document.createElement("input");
            seen.type = "hidden";
            seen.name = "suggestion_seen";
            seen.id = "suggestion-seen";
            form.append(seen);
          }
          seen.value = data.seen;
        }
        announce("The machine suggestion is shown with the evidence.");
      })
      .catch(() => {})
      .finally(() => {
        pendingReveal = null;
      });
    return pendingReveal;
  }

  function revealAfterChoice(form) {
    const checked = form.querySelector("input[name=verdict]:checked");
    if (checked) revealSuggestion(checked.value);
  }

  function isTyping(target) {
    if (!(target instanceof Element)) return false;
    if (target.isContentEditable || target.tagName === "TEXTAREA") return true;
    if (target.tagName !== "INPUT") return false;
    return !["radio", "checkbox", "submit", "button", "hidden"].includes(target.type);
  }

  /* Enter submits from the verdict buttons, the reason list or the page itself, not from links. */
  function submitsOnEnter(form, target) {
    if (target === document.body || ["verdict-group", "item-title"].includes(target.id)) return true;
    return form.contains(target) && (target.tagName === "SELECT" || target.type === "radio");
  }

  function toggleHelp() {
    const dialog = document.getElementById("shortcut-help");
    if (!dialog) return;
    if (dialog.open) dialog.close();
    else dialog.showModal();
  }

  function onKey(event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    if (isTyping(event.target)) {
      // Escape leaves the note so the single-key shortcuts work again.
      if (event.key === "Escape") event.target.blur();
      return;
    }
    const dialog = document.getElementById("shortcut-help");
    if (dialog && dialog.open && event.key !== "?") return;
    const form = document.getElementById("decision-form");
    const live = form && form.dataset.refused !== "true";
    const key = event.key;
    if (key === "?") {
      event.preventDefault();
      toggleHelp();
    } else if (live && key in VERDICT_KEYS) {
      event.preventDefault();
      chooseVerdict(form, VERDICT_KEYS[key]);
    } else if (key === "Enter" && live && submitsOnEnter(form, event.target)) {
      if (form.querySelector("input[name=verdict]:checked")) {
        event.preventDefault();
        if (!form.elements.reason_code.value) showMissingReason(form, true);
        else form.requestSubmit();
      }
    } else if (key === "n") {
      // On the home page: the first of my queues that has work waiting.
      const next =
        document.getElementById("next-form") ||
        document.querySelector(".next-form:not([data-pending='0'])") ||
        document.querySelector(".next-form");
      if (next) {
        event.preventDefault();
        next.requestSubmit();
      }
    } else if (key === "m" && document.getElementById("suggestion-reveal-form")) {
      event.preventDefault();
      const checked = form && form.querySelector("input[name=verdict]:checked");
      revealSuggestion(checked ? checked.value : "");
    } else if (key === "s") {
      const release = document.getElementById("release-form");
      if (release && release.dataset.refused !== "true") {
        event.preventDefault();
        release.requestSubmit();
      }
    }
  }

  /* Open an item with focus on it, not on <body>: on the first error if the form came back,
   * else on the verdicts of an item I hold, else on the item's heading. */
  function placeFocus(form) {
    if (!document.body.classList.contains("console-item")) return;
    const error = document.querySelector("#decision-form .errorlist");
    const target =
      (error && error.closest(".form-row, fieldset")) ||
      (form && form.dataset.refused !== "true" && document.getElementById("verdict-group")) ||
      document.getElementById("item-title");
    if (!target) return;
    if (!target.hasAttribute("tabindex")) target.setAttribute("tabindex", "-1");
    target.focus({ preventScroll: true });
  }

  function init() {
    const form = document.getElementById("decision-form");
    if (form) {
      for (const radio of form.querySelectorAll("input[name=verdict]")) {
        radio.addEventListener("change", () => {
          filterReasons(form);
          revealAfterChoice(form);
        });
      }
      filterReasons(form);
      const select = form.elements.reason_code;
      select.addEventListener("change", () => showMissingReason(form, false));
      // A click on Submit with no reason: the browser refuses (required); say it in the page.
      select.addEventListener("invalid", () => showMissingReason(form, true));
      form.addEventListener("submit", (event) => {
        // A reveal on its way: submit once its record of what was seen is in the form.
        if (pendingReveal) {
          event.preventDefault();
          pendingReveal.then(() => form.requestSubmit());
          return;
        }
        // One decision per click: a double-click would come back as a stale lease.
        setTimeout(() => {
          for (const el of form.querySelectorAll("[type=submit]")) el.disabled = true;
        }, 0);
      });
    }
    // The item's decision form, or a lane task's release form, carries the lease heartbeat.
    const leased = document.querySelector("form[data-renew-url]");
    if (leased) startHeartbeat(leased);
    const asker = document.getElementById("suggestion-reveal-form");
    if (asker) {
      asker.addEventListener("submit", (event) => {
        event.preventDefault();
        const checked = form && form.querySelector("input[name=verdict]:checked");
        revealSuggestion(checked ? checked.value : "");
      });
    }
    placeFocus(form);
    document.addEventListener("keydown", onKey);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
