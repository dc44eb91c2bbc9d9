// relata review: keyboard shortcuts for the queue. The page works without this file;
// it only moves focus and presses the page's own buttons.
//   j / k  next / previous candidate     x  select or unselect it
//   a      approve it                    r  reject it (focuses its note first when empty)
(function () {
  "use strict";
  function cards() { return Array.prototype.slice.call(document.querySelectorAll("article.candidate")); }
  var current = -1;
  function focus(i) {
    var list = cards();
    if (list.length === 0) { return; }
    current = Math.max(0, Math.min(i, list.length - 1));
    list.forEach(function (c, n) { c.classList.toggle("focused", n === current); });
    list[current].focus();
    list[current].scrollIntoView({ block: "nearest" });
  }
  function card() { var list = cards(); return current >= 0 ? list[current] : null; }
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) { return; }
    var t = e.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT")) {
      if (e.key === "Escape") { t.blur(); }
      return;
    }
    var c = card();
    if (e.key === "j") { focus(current + 1); e.preventDefault(); }
    else if (e.key === "k") { focus(current - 1); e.preventDefault(); }
    else if (e.key === "x" && c) {
      var box = c.querySelector("input[type=checkbox]");
      if (box) { box.checked = !box.checked; }
      e.preventDefault();
    } else if (e.key === "a" && c) {
      var ok = c.querySelector("button.approve");
      if (ok) { ok.click(); }
      e.preventDefault();
    } else if (e.key === "r" && c) {
      var note = c.querySelector("input.note");
      var no = c.querySelector("button.reject");
      if (note && note.value.trim() === "") { note.focus(); }
      else if (no) { no.click(); }
      e.preventDefault();
    }
  });
  document.addEventListener("DOMContentLoaded", function () {
    // Enter in a card's note rejects that card, the only reason to write one there.
    cards().forEach(function (c) {
      var note = c.querySelector("input.note");
      var no = c.querySelector("button.reject");
      if (note && no) {
        note.addEventListener("keydown", function (e) {
          if (e.key === "Enter") { e.preventDefault(); no.click(); }
        });
      }
    });
    if (cards().length > 0) { focus(0); }
  });
})();
