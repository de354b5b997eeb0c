// eywa's web view: keyboard shortcuts. Every page reads and works without this file.
"use strict";
document.addEventListener("keydown", (event) => {
  const quick = document.getElementById("quick");
  if (!quick) return;
  const typing = event.target instanceof HTMLElement &&
    (event.target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(event.target.tagName));
  // ⌘K or Ctrl+K anywhere, or "/" when not typing: the quick search in the header.
  if ((event.key === "k" || event.key === "K") && (event.metaKey || event.ctrlKey)) {
    event.preventDefault();
    quick.focus();
    quick.select();
  } else if (event.key === "/" && !typing) {
    event.preventDefault();
    quick.focus();
  } else if (event.key === "Escape" && document.activeElement === quick) {
    quick.blur();
  }
});
// A button with data-copy puts its text on the clipboard.
document.addEventListener("click", (event) => {
  const button = event.target instanceof Element ? event.target.closest("button[data-copy]") : null;
  if (!button || !navigator.clipboard) return;
  navigator.clipboard.writeText(button.dataset.copy).then(
    () => { button.textContent = "Copied"; },
    () => { button.textContent = "Copy failed"; },
  );
});
