// A table that renders only the rows in view: a scrolling box holding one <table> whose body is
// a spacer row, the visible rows and another spacer. Rows have one fixed height (CSS `--row`),
// so a list of 100,000 items costs what a list of 40 does.

const ROW = 26; // px, as .vlist tr in app.css
const OVERSCAN = 8;
const MOST = 80; // never more rows than this in the DOM, whatever the box's height

export class VList {
  // `box`: the scrolling element holding a <table> with a <tbody>; `row(item)` makes a <tr>.
  constructor(box, row) {
    this.box = box;
    this.body = box.querySelector('tbody');
    this.row = row;
    this.items = [];
    this.cols = box.querySelectorAll('thead th').length || 1;
    this.shown = null; // [first, last, version] of what is drawn
    this.version = 0;
    box.addEventListener('scroll', () => this.draw(), { passive: true });
  }

  // New items (an array, or {length, at(i)} for a list read from the end).
  set(items) {
    this.items = items;
    this.version += 1;
    this.draw();
  }

  // Draws again the rows in view (the items changed in place).
  refresh() {
    this.version += 1;
    this.draw();
  }

  draw() {
    if (this.box.offsetParent === null) return; // hidden: drawn when shown
    const n = this.items.length;
    const height = this.box.clientHeight || 400;
    let first = Math.max(0, Math.floor(this.box.scrollTop / ROW) - OVERSCAN);
    const last = Math.min(n, first + Math.min(MOST, Math.ceil(height / ROW) + 2 * OVERSCAN));
    if (last - first > MOST) first = last - MOST;
    const s = this.shown;
    if (s && s[0] === first && s[1] === last && s[2] === this.version) return;
    this.shown = [first, last, this.version];
    const at = typeof this.items.at === 'function' && !Array.isArray(this.items)
      ? (i) => this.items.at(i)
      : (i) => this.items[i];
    const rows = [];
    if (first > 0) rows.push(spacer(first * ROW, this.cols));
    for (let i = first; i < last; i++) rows.push(this.row(at(i), i));
    if (last < n) rows.push(spacer((n - last) * ROW, this.cols));
    this.body.replaceChildren(...rows);
  }
}

function spacer(px, cols) {
  const tr = document.createElement('tr');
  tr.className = 'spacer';
  tr.setAttribute('aria-hidden', 'true');
  const td = document.createElement('td');
  td.colSpan = cols;
  td.style.height = `${px}px`;
  tr.append(td);
  return tr;
}
