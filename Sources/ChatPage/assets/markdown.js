// inferd's small Markdown renderer for model answers. It never builds HTML from text: every piece
// of the answer becomes a text node (textContent), inside elements this file creates, so model
// output cannot inject markup or script whatever it contains. Covered: paragraphs (single line
// breaks kept), headings, lists (- * + and 1. 1)), block quotes, fenced code blocks with a copy
// button (an unclosed fence, as while an answer streams, runs to the end), inline code, **bold**,
// *italic*, [links](https://…) and bare https:// links. Links open in a new tab without a
// referrer; any scheme but http, https and mailto stays plain text.
"use strict";

(function () {
  const FENCE = /^\s{0,3}(```+|~~~+)\s*([\w+#.-]*)\s*$/;
  const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
  const BULLET = /^\s{0,3}[-*+]\s+(.*)$/;
  const NUMBERED = /^\s{0,3}(\d{1,9})[.)]\s+(.*)$/;
  const QUOTE = /^\s{0,3}>\s?(.*)$/;

  function el(tag, text) {
    const node = document.createElement(tag);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // A URL the page may link to, or null.
  function safeURL(raw) {
    try {
      const url = new URL(raw, window.location.href);
      return ["http:", "https:", "mailto:"].includes(url.protocol) ? url.href : null;
    } catch (_) {
      return null;
    }
  }

  function link(parent, label, href) {
    const url = safeURL(href);
    if (!url) {
      parent.appendChild(document.createTextNode(label === href ? href : `[${label}](${href})`));
      return;
    }
    const a = el("a");
    a.href = url;
    a.target = "_blank";
    a.rel = "noopener noreferrer nofollow";
    inline(a, label, false);
    parent.appendChild(a);
  }

  // Inline spans of `text` appended to `parent`, left to right: the earliest match wins.
  const INLINE = [
    { re: /`([^`\n]+)`/, make: (p, m) => p.appendChild(el("code", m[1])) },
    { re: /\[([^\]\n]+)\]\(([^()\s]+)\)/, make: (p, m, links) => (links ? link(p, m[1], m[2]) : p.appendChild(document.createTextNode(m[0]))) },
    { re: /\*\*([^*\n]+)\*\*/, make: (p, m, links) => { const b = el("strong"); inline(b, m[1], links); p.appendChild(b); } },
    { re: /(?<![\w*])\*([^*\s][^*\n]*?)\*(?![\w*])/, make: (p, m, links) => { const i = el("em"); inline(i, m[1], links); p.appendChild(i); } },
    { re: /\bhttps?:\/\/[^\s<>()]+[^\s<>().,;:!?'"]/, make: (p, m, links) => (links ? link(p, m[0], m[0]) : p.appendChild(document.createTextNode(m[0]))) },
  ];

  function inline(parent, text, links = true) {
    let rest = text;
    while (rest.length > 0) {
      let best = null;
      for (const rule of INLINE) {
        const m = rule.re.exec(rest);
        if (m && (best === null || m.index < best.m.index)) best = { m, rule };
      }
      if (best === null) {
        parent.appendChild(document.createTextNode(rest));
        return;
      }
      if (best.m.index > 0) parent.appendChild(document.createTextNode(rest.slice(0, best.m.index)));
      best.rule.make(parent, best.m, links);
      rest = rest.slice(best.m.index + best.m[0].length);
    }
  }

  // Lines joined by <br>, each rendered inline.
  function lines(parent, list) {
    list.forEach((line, i) => {
      if (i > 0) parent.appendChild(el("br"));
      inline(parent, line);
    });
  }

  function codeBlock(code, language) {
    const box = el("div");
    box.className = "code";
    const pre = el("pre");
    const c = el("code", code);
    if (language) c.dataset.language = language;
    pre.appendChild(c);
    const copy = el("button", "Copy");
    copy.type = "button";
    copy.setAttribute("aria-label", "Copy code");
    copy.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(code);
        copy.textContent = "Copied";
      } catch (_) {
        const range = document.createRange();
        range.selectNodeContents(c);
        const selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        copy.textContent = "Selected";
      }
      setTimeout(() => { copy.textContent = "Copy"; }, 1500);
    });
    box.append(copy, pre);
    return box;
  }

  // The answer as a fragment of elements and text nodes.
  function render(text) {
    const out = document.createDocumentFragment();
    const all = String(text).replace(/\r\n?/g, "\n").split("\n");
    let i = 0;
    while (i < all.length) {
      const line = all[i];
      let m;
      if (line.trim() === "") { i += 1; continue; }
      if ((m = FENCE.exec(line))) {
        const marker = m[1];
        const body = [];
        i += 1;
        while (i < all.length && !all[i].trim().startsWith(marker)) { body.push(all[i]); i += 1; }
        i += 1; // the closing fence (or past the end while it streams)
        out.appendChild(codeBlock(body.join("\n"), m[2]));
        continue;
      }
      if ((m = HEADING.exec(line))) {
        const h = el(["h3", "h4", "h5", "h6", "h6", "h6"][m[1].length - 1]);
        inline(h, m[2]);
        out.appendChild(h);
        i += 1;
        continue;
      }
      if (BULLET.test(line) || NUMBERED.test(line)) {
        const ordered = !BULLET.test(line);
        const list = el(ordered ? "ol" : "ul");
        if (ordered) {
          const start = parseInt(NUMBERED.exec(line)[1], 10);
          if (start !== 1) list.start = start;
        }
        const pattern = ordered ? NUMBERED : BULLET;
        while (i < all.length && (m = pattern.exec(all[i]))) {
          const item = [ordered ? m[2] : m[1]];
          i += 1;
          // Indented lines continue the item.
          while (i < all.length && /^\s{2,}\S/.test(all[i]) && !BULLET.test(all[i]) && !NUMBERED.test(all[i])) {
            item.push(all[i].trim());
            i += 1;
          }
          const li = el("li");
          lines(li, item);
          list.appendChild(li);
        }
        out.appendChild(list);
        continue;
      }
      if (QUOTE.test(line)) {
        const quote = el("blockquote");
        const body = [];
        while (i < all.length && (m = QUOTE.exec(all[i]))) { body.push(m[1]); i += 1; }
        quote.appendChild(render(body.join("\n")));
        out.appendChild(quote);
        continue;
      }
      const paragraph = [];
      while (i < all.length && all[i].trim() !== "" && !FENCE.test(all[i]) && !HEADING.test(all[i])
        && !BULLET.test(all[i]) && !NUMBERED.test(all[i]) && !QUOTE.test(all[i])) {
        paragraph.push(all[i]);
        i += 1;
      }
      const p = el("p");
      lines(p, paragraph);
      out.appendChild(p);
    }
    return out;
  }

  window.InferdMarkdown = Object.freeze({ render, safeURL });
})();
