import { describe, expect, it } from 'vitest';
import { defaultMapping, duplicateTargets, fileFormat, importQuery } from './import-mapping';

describe('defaultMapping()', () => {
  it('same-named fields ignoring case, reserved keys, the rest ignored', () => {
    expect(defaultMapping(['supplier', 'AMOUNT', 'Comment', 'Notes', ''], ['Supplier', 'Amount'])).toEqual({
      supplier: 'Supplier',
      AMOUNT: 'Amount',
      Comment: 'comment',
      Notes: null,
    });
  });
  it('a second column filling the same field starts ignored', () => {
    expect(defaultMapping(['Amount', 'amount'], ['Amount'])).toEqual({ Amount: 'Amount', amount: null });
  });
});

describe('duplicateTargets()', () => {
  it('targets filled twice', () => {
    expect(duplicateTargets({ a: 'X', b: 'X', c: 'Y', d: null, e: null })).toEqual(['X']);
    expect(duplicateTargets({ a: 'X', b: null })).toEqual([]);
  });
});

describe('fileFormat()', () => {
  it('by name, then by type', () => {
    expect(fileFormat('Invoices.XLSX')).toBe('xlsx');
    expect(fileFormat('a.csv')).toBe('csv');
    expect(fileFormat('export', 'text/csv')).toBe('csv');
    expect(fileFormat('book', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet')).toBe('xlsx');
    expect(fileFormat('photo.png', 'image/png')).toBeNull();
  });
});

describe('importQuery()', () => {
  it('format, dry run and the mapping as JSON', () => {
    const q = new URLSearchParams(importQuery({ format: 'csv', dryRun: true, mapping: { 'Sup plier': 'Supplier', x: null } }));
    expect(q.get('format')).toBe('csv');
    expect(q.get('dryRun')).toBe('true');
    expect(JSON.parse(q.get('mapping')!)).toEqual({ 'Sup plier': 'Supplier', x: null });
    expect(importQuery({ format: 'xlsx', dryRun: false })).toBe('format=xlsx');
  });
});
