/** CSV output (RFC 4180): fields quoted when they hold a delimiter, quote or line break; CRLF line ends. */

function cell(v: unknown): string {
  if (v === null || v === undefined) return '';
  const s = v instanceof Date ? v.toISOString() : typeof v === 'object' ? JSON.stringify(v) : String(v);
  // a leading = + - @ would be a formula in a spreadsheet (CSV injection): prefix a quote
  const safe = /^[=+\-@\t\r]/.test(s) && !/^-?\d+(\.\d+)?$/.test(s) ? `'${s}` : s;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

export function csvLine(values: readonly unknown[]): string {
  return values.map(cell).join(',') + '\r\n';
}
