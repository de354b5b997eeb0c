// eywa's web view: keyboard shortcuts, Copy buttons and live lists. Every page reads and
// works without this file.
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
// j and k move through the rows of the page's lists ([data-rows]): the row's link takes
// the focus, so Enter opens it (a transcript's messages take it themselves).
document.addEventListener("keydown", (event) => {
  if (event.key !== "j" && event.key !== "k") return;
  if (event.metaKey || event.ctrlKey || event.altKey) return;
  const typing = event.target instanceof HTMLElement &&
    (event.target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(event.target.tagName));
  if (typing) return;
  const rows = [...document.querySelectorAll("[data-rows] > *")];
  if (rows.length === 0) return;
  event.preventDefault();
  const at = rows.findIndex((row) => row.classList.contains("current"));
  const next = at < 0 ? 0 : Math.min(Math.max(at + (event.key === "j" ? 1 : -1), 0), rows.length - 1);
  if (at >= 0) rows[at].classList.remove("current");
  const row = rows[next];
  row.classList.add("current");
  const link = row.parentElement.dataset.rows === "self"
    ? null
    : row.querySelector("a.headline[href]") ?? row.querySelector("a[href]");
  const target = link ?? row;
  if (!link && !row.hasAttribute("tabindex")) row.setAttribute("tabindex", "-1");
  target.focus({ preventScroll: true });
  row.scrollIntoView({ block: "nearest" });
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
// A page with a [data-live] list follows the store: when /events says an ingest changed
// something, the page fetches itself again and adds the items (by id) it lacks, where the
// new version has them, and refreshes its [data-live-text] counts. What is open stays open.
(() => {
  const lists = document.querySelectorAll("[data-live][id]");
  if (lists.length === 0 || !window.EventSource) return;
  let busy = false;
  let again = false;
  const refresh = async () => {
    if (busy) { again = true; return; }
    busy = true;
    try {
      const answer = await fetch(location.href, { headers: { Accept: "text/html" } });
      if (!answer.ok) return;
      const fresh = new DOMParser().parseFromString(await answer.text(), "text/html");
      for (const list of lists) {
        const next = fresh.getElementById(list.id);
        if (!next) continue;
        const items = [...next.children];
        items.forEach((item, i) => {
          if (!item.id || document.getElementById(item.id)) return;
          const after = items.slice(i + 1).find((n) => n.id && document.getElementById(n.id));
          const node = document.importNode(item, true);
          node.classList.add("new");
          if (after) list.insertBefore(node, document.getElementById(after.id));
          else list.appendChild(node);
        });
      }
      for (const text of document.querySelectorAll("[data-live-text][id]")) {
        const next = fresh.getElementById(text.id);
        if (next) text.textContent = next.textContent;
      }
    } finally {
      busy = false;
      if (again) { again = false; refresh(); }
    }
  };
  const events = new EventSource("/events");
  events.addEventListener("changed", refresh);
  window.addEventListener("pagehide", () => events.close());
})();
