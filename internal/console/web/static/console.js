// The console works without this script. It keeps a form's button from being pressed twice
// while the request runs, and moves the progress bars of running generation batches by
// reading them from the admin API (a reload of the page shows the same, without it).
document.addEventListener("submit", function (ev) {
  var button = ev.target.querySelector("button[type=submit]");
  if (button) { setTimeout(function () { button.disabled = true; }, 0); }
});

(function () {
  var rows = document.querySelectorAll("tr[data-batch-poll]");
  if (!rows.length || !window.fetch) { return; }
  var ended = null; // the first batch seen to end: the page reloads to show its result

  function text(row, sel, value) {
    var el = row.querySelector(sel);
    if (el) { el.textContent = value; }
  }

  function poll(row) {
    fetch(row.getAttribute("data-batch-poll"), { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (res) { if (!res.ok) { throw new Error("status " + res.status); } return res.json(); })
      .then(function (b) {
        var bar = row.querySelector("progress");
        if (bar) { bar.max = b.requested; bar.value = b.done; bar.textContent = b.done.toLocaleString("en-US"); }
        text(row, "[data-batch-done]", b.done.toLocaleString("en-US"));
        text(row, "[data-batch-status]", b.status);
        if (b.status === "queued" || b.status === "running") {
          setTimeout(function () { poll(row); }, 500);
          return;
        }
        row.removeAttribute("data-batch-poll");
        row.setAttribute("data-batch-ended", b.status);
        if (!ended) {
          ended = b;
          // Statistics and actions change with the batch's end: show the page anew.
          setTimeout(function () {
            var done = b.status === "done" ? "generated" : "batch_" + b.status;
            window.location.assign(window.location.pathname + "?tab=batches&done=" + done + "&n=" + b.done);
          }, 400);
        }
      })
      .catch(function () { setTimeout(function () { poll(row); }, 2000); });
  }

  for (var i = 0; i < rows.length; i++) { poll(rows[i]); }
})();

// A copy button puts the id it carries on the clipboard and says so.
document.addEventListener("click", function (ev) {
  var button = ev.target.closest ? ev.target.closest("button[data-copy]") : null;
  if (!button || !navigator.clipboard) { return; }
  navigator.clipboard.writeText(button.getAttribute("data-copy")).then(function () {
    button.textContent = "Copied";
    setTimeout(function () { button.textContent = "Copy"; }, 1500);
  });
});
