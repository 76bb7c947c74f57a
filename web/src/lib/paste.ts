/**
 * Cells pasted from a spreadsheet. Excel, LibreOffice and Google Sheets put a selection on the
 * clipboard as tab-separated lines; a cell holding a tab, a line break or a quote is wrapped in
 * double quotes with inner quotes doubled (as in CSV). A rule's list or table is filled from them.
 */

/** The rows of cells of pasted text; the trailing line break spreadsheets add is not an empty row. */
export function parseCells(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let i = 0;
  const s = text.replace(/\r\n?/g, '\n');
  let atCellStart = true;
  while (i < s.length) {
    const c = s[i];
    if (atCellStart && c === '"') {
      // a quoted cell: up to the closing quote not followed by another
      let j = i + 1;
      let value = '';
      let closed = false;
      while (j < s.length) {
        if (s[j] === '"') {
          if (s[j + 1] === '"') {
            value += '"';
            j += 2;
            continue;
          }
          closed = true;
          break;
        }
        value += s[j];
        j++;
      }
      // a cell that only starts with a quote (never closed, or text after the closing one) is taken as typed
      if (closed && (j + 1 >= s.length || s[j + 1] === '\t' || s[j + 1] === '\n')) {
        cell = value;
        i = j + 1;
        atCellStart = false;
        continue;
      }
    }
    atCellStart = false;
    if (c === '\t') {
      row.push(cell);
      cell = '';
      atCellStart = true;
    } else if (c === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      atCellStart = true;
    } else cell += c;
    i++;
  }
  if (!atCellStart || cell !== '' || row.length) {
    row.push(cell);
    rows.push(row);
  }
  return rows;
}

/** Whether pasted text is more than one cell (then it fills the list or table instead of one input). */
export function isMultiCell(text: string): boolean {
  return /[\t\n\r]/.test(text.replace(/[\r\n]+$/, ''));
}

/** A list from pasted cells: every non-empty cell, row by row, trimmed. */
export function cellsToList(rows: string[][]): string[] {
  return rows.flatMap((r) => r.map((c) => c.trim()).filter((c) => c !== ''));
}

export interface TableValue {
  columns: string[];
  rows: Record<string, string | number | boolean | null>[];
}

/**
 * A table from pasted cells: the first row names the columns (a blank or repeated name becomes
 * "Column N"), each further row is an object of its cells (missing cells are ""); empty rows are dropped.
 */
export function cellsToTable(rows: string[][]): TableValue {
  if (rows.length === 0) return { columns: [], rows: [] };
  const width = Math.max(...rows.map((r) => r.length));
  const seen = new Set<string>();
  const columns = Array.from({ length: width }, (_, i) => {
    let name = (rows[0][i] ?? '').trim();
    if (name === '' || seen.has(name.toLowerCase())) name = `Column ${i + 1}`;
    seen.add(name.toLowerCase());
    return name;
  });
  const body = rows
    .slice(1)
    .filter((r) => r.some((c) => c.trim() !== ''))
    .map((r) => Object.fromEntries(columns.map((c, i) => [c, (r[i] ?? '').trim()])));
  return { columns, rows: body };
}

/** The columns of a stored table value: the keys of its rows, in first-seen order. */
export function tableColumns(rows: Record<string, unknown>[]): string[] {
  const cols: string[] = [];
  for (const r of rows) for (const k of Object.keys(r)) if (!cols.includes(k)) cols.push(k);
  return cols;
}
