// The memory explorer's only script: small enhancements; every page works without it.
(function () {
  "use strict";
  // "/" moves to the search box, as on many search pages (not while typing in a field).
  document.addEventListener("keydown", function (event) {
    const target = event.target;
    const typing = target instanceof HTMLElement &&
      (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
    const search = document.getElementById("q");
    if (event.key === "/" && !typing && search) {
      event.preventDefault();
      search.focus();
    }
  });
  // Forgetting is kept in history, purging is not: ask once more before a forget is sent.
  const form = document.getElementById("forget-form");
  if (form) {
    form.addEventListener("submit", function (event) {
      const reason = form.querySelector("#reason");
      if (form.dataset.confirmed !== "yes" &&
          !window.confirm("Forget this memory because: " + (reason ? reason.value : "") + "?")) {
        event.preventDefault();
      }
    });
  }
})();
