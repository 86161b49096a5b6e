// The console works without this script. It only tells, while a long form (code generation)
// runs, that the request is under way, and keeps the button from being pressed twice.
document.addEventListener("submit", function (ev) {
  var form = ev.target;
  var text = form.getAttribute("data-busy");
  if (!text) { return; }
  var out = form.querySelector(".busy");
  if (out) { out.textContent = text; }
  var button = form.querySelector("button[type=submit]");
  if (button) { setTimeout(function () { button.disabled = true; }, 0); }
});
