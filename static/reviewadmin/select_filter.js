/* Review Console admin: name the search icons of Django's two-box group picker properly.
 *
 * SelectFilter2.js puts an aria-label on a bare <span> (the icon inside each search box's
 * label), which ARIA does not allow (axe: aria-prohibited-attr). As an image, the icon may
 * carry that label, and the search box keeps it as its name. SelectFilter builds the boxes on
 * window load; this script is deferred, so its load listener runs after SelectFilter's.
 */
"use strict";
window.addEventListener("load", () => {
  document.querySelectorAll(".selector .search-label-icon[aria-label]").forEach((icon) => {
    icon.setAttribute("role", "img");
  });
});
