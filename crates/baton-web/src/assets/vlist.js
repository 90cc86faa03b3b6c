// A table that renders only the rows in view: a scrolling box holding one <table> whose body is
// a spacer row, the visible rows and another spacer. Rows have one fixed height (CSS `--row`),
// so a list of 100,000 items costs what a list of 40 does.
//
// Rows are recycled: the <tr> that showed the first visible item is filled with the new first
// visible item when the list scrolls, and so on down. Scrolling therefore makes no DOM garbage,
// whose collection (a full one, tracing every event the page holds) was the longest stall while
// scrolling a big project.
//
// Checked by `tsc` (`crates/baton-web/tsconfig.json`).
// @ts-check

/**
 * A row this list drew, with the index of the item it shows.
 * @typedef {HTMLTableRowElement & {index?: number}} Row
 */

/**
 * What a list shows: an array, or a list read through `at` (the events, newest first).
 * @template T
 * @typedef {T[] | {length: number, at(i: number): T}} Items
 */

const ROW = 26; // px, as .vlist tr in app.css
const OVERSCAN = 8;
const MOST = 80; // never more rows than this in the DOM, whatever the box's height

/** @template T */
export class VList {
  // `box`: the scrolling element holding a <table> with a <tbody>. `row(item, i, tr)` fills the
  // row `tr` this list drew before (for another item, or the same one changed) and returns it;
  // without `tr` it makes a new row.
  /** @param {HTMLElement} box @param {(item: T, i: number, tr?: Row) => Row} row */
  constructor(box, row) {
    this.box = box;
    this.body = /** @type {HTMLTableSectionElement} */ (box.querySelector('tbody'));
    this.row = row;
    /** @type {Items<T>} */
    this.items = [];
    this.cols = box.querySelectorAll('thead th').length || 1;
    /** @type {[number, number, number] | null} [first, last, version] of what is drawn */
    this.shown = null;
    this.version = 0;
    this.top = spacer(this.cols);
    this.bottom = spacer(this.cols);
    /** @type {Row[]} the <tr>s between the spacers, in order */
    this.rows = [];
    /** @type {Row[]} rows taken out, filled again before any new one is made */
    this.spare = [];
    this.body.replaceChildren(this.top, this.bottom);
    box.addEventListener('scroll', () => this.draw(), { passive: true });
  }

  // New items (an array, or {length, at(i)} for a list read from the end).
  /** @param {Items<T>} items */
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
    const items = this.items;
    /** @type {(i: number) => T} */
    const at = typeof items.at === 'function' && !Array.isArray(items) ? (i) => items.at(i) : (i) => /** @type {T[]} */ (items)[i];
    const rows = this.rows;
    // A focused control in a row about to show another item would act on that item: it loses
    // focus, as it did when rows were made anew.
    const focused = document.activeElement;
    const holdsFocus = this.body.contains(focused);
    for (let k = 0; k < last - first; k++) {
      const i = first + k;
      const old = rows[k];
      if (holdsFocus && old && old.index !== i && old.contains(focused)) /** @type {HTMLElement | SVGElement} */ (focused).blur();
      const tr = this.row(at(i), i, old || this.spare.pop());
      tr.index = i;
      if (tr === old) continue;
      if (old) old.replaceWith(tr);
      else this.bottom.before(tr);
      rows[k] = tr;
    }
    while (rows.length > last - first) {
      const tr = /** @type {Row} */ (rows.pop());
      tr.remove();
      this.spare.push(tr); // kept for when the window grows again (near the ends it is shorter)
    }
    size(this.top, first * ROW);
    size(this.bottom, (n - last) * ROW);
  }
}

/** @param {number} cols */
function spacer(cols) {
  const tr = document.createElement('tr');
  tr.className = 'spacer';
  tr.setAttribute('aria-hidden', 'true');
  tr.hidden = true;
  const td = document.createElement('td');
  td.colSpan = cols;
  tr.append(td);
  return tr;
}

/** @param {HTMLTableRowElement} tr @param {number} px */
function size(tr, px) {
  tr.hidden = px === 0;
  const h = `${px}px`;
  const td = /** @type {HTMLTableCellElement} */ (tr.firstChild);
  if (td.style.height !== h) td.style.height = h;
}
