import { describe, expect, it } from 'vitest';
import { cellsToList, cellsToTable, isMultiCell, parseCells, tableColumns } from './paste';

describe('parseCells()', () => {
  it('tab-separated lines, the trailing line break of a spreadsheet copy is not a row', () => {
    expect(parseCells('a\tb\n1\t2\n')).toEqual([
      ['a', 'b'],
      ['1', '2'],
    ]);
    expect(parseCells('a\tb\r\n1\t2\r\n')).toEqual([
      ['a', 'b'],
      ['1', '2'],
    ]);
  });
  it('empty cells are kept in place', () => {
    expect(parseCells('a\t\tc\n\tb\t')).toEqual([
      ['a', '', 'c'],
      ['', 'b', ''],
    ]);
  });
  it('a quoted cell holds line breaks, tabs and doubled quotes', () => {
    expect(parseCells('"two\nlines"\t"say ""hi"""\tx\ty\n"a\tb"\tz')).toEqual([
      ['two\nlines', 'say "hi"', 'x', 'y'],
      ['a\tb', 'z'],
    ]);
  });
  it('a quote that does not wrap the whole cell is text', () => {
    expect(parseCells('5" screen\t"quoted" tail\n"open')).toEqual([['5" screen', '"quoted" tail'], ['"open']]);
  });
  it('one value, and nothing', () => {
    expect(parseCells('DK')).toEqual([['DK']]);
    expect(parseCells('')).toEqual([]);
  });
});

describe('isMultiCell()', () => {
  it('a tab or a line inside the text; a single value with a trailing line break is one cell', () => {
    expect(isMultiCell('a\tb')).toBe(true);
    expect(isMultiCell('a\nb')).toBe(true);
    expect(isMultiCell('a\n')).toBe(false);
    expect(isMultiCell('plain')).toBe(false);
  });
});

describe('cellsToList()', () => {
  it('every non-empty cell, row by row, trimmed', () => {
    expect(cellsToList(parseCells('DK\nSE \n\nNO\tFI\n'))).toEqual(['DK', 'SE', 'NO', 'FI']);
  });
});

describe('cellsToTable()', () => {
  it('the first row names the columns; rows become objects; empty rows dropped; short rows padded', () => {
    expect(cellsToTable(parseCells('Country\tLimit\nDK\t5000\n\t\nSE\n'))).toEqual({
      columns: ['Country', 'Limit'],
      rows: [
        { Country: 'DK', Limit: '5000' },
        { Country: 'SE', Limit: '' },
      ],
    });
  });
  it('blank or repeated column names get a position name', () => {
    expect(
      cellsToTable([
        ['A', '', 'a'],
        ['1', '2', '3'],
      ]).columns,
    ).toEqual(['A', 'Column 2', 'Column 3']);
  });
  it('nothing pasted: an empty table', () => {
    expect(cellsToTable([])).toEqual({ columns: [], rows: [] });
  });
});

describe('tableColumns()', () => {
  it('keys of the rows in first-seen order', () => {
    expect(
      tableColumns([
        { a: 1, b: 2 },
        { c: 3, a: 4 },
      ]),
    ).toEqual(['a', 'b', 'c']);
  });
});
