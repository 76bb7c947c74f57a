import { describe, expect, it } from 'vitest';
import { formatValue, inputToValue, validateValue, fieldLabel } from './values';

describe('field values', () => {
  it('formats by type, in the time zone, always as text', () => {
    expect(formatValue(true, { type: 'boolean' }, 'UTC')).toBe('Yes');
    expect(formatValue(false, { type: 'boolean' }, 'UTC')).toBe('No');
    expect(formatValue('2026-03-01', { type: 'date' }, 'Asia/Tokyo')).toBe('1 Mar 2026');
    expect(formatValue('2026-03-01T23:30:00Z', { type: 'datetime' }, 'Asia/Tokyo')).toBe('2 Mar 2026, 08:30');
    expect(formatValue(1234.5, { type: 'number' }, 'UTC')).toBe('1,234.5');
    expect(formatValue(null, { type: 'text' }, 'UTC')).toBe('');
    expect(formatValue('<img src=x onerror=alert(1)>', undefined, 'UTC')).toBe('<img src=x onerror=alert(1)>');
  });
  it('reads inputs back by type', () => {
    expect(inputToValue('12,5', { type: 'number' })).toBe(12.5);
    expect(inputToValue('', { type: 'text' })).toBeNull();
    expect(inputToValue(true, { type: 'boolean' })).toBe(true);
    expect(inputToValue(7, { type: 'text' })).toBe('7');
  });
  it('validates what the server would refuse, naming the field', () => {
    expect(validateValue('1.5', { name: 'Qty', type: 'integer' })).toBe('Qty must be a whole number');
    expect(validateValue('x', { name: 'Amount', label: 'Amount (DKK)', type: 'number' })).toBe('Amount (DKK) must be a number');
    expect(validateValue('a@b', { name: 'Mail', type: 'email' })).toBe('Mail must be an email address');
    expect(validateValue('Red', { name: 'Colour', type: 'dropdown', options: ['Blue'] })).toBe('Colour must be one of Blue');
    expect(validateValue('', { name: 'Qty', type: 'integer', required: true })).toBeNull();
    expect(fieldLabel({ name: 'n', label: ' ' })).toBe('n');
  });
});

import { valueToInput, inputToStored } from './values';
describe('datetime inputs in the time zone', () => {
  it('round-trips a stored instant through the wall-clock input', () => {
    expect(valueToInput('2026-03-01T23:30:00.000Z', { type: 'datetime' }, 'Asia/Tokyo')).toBe('2026-03-02 08:30:00');
    expect(inputToStored('2026-03-02 08:30:00', { type: 'datetime' }, 'Asia/Tokyo')).toBe('2026-03-01T23:30:00.000Z');
    expect(valueToInput(null, { type: 'boolean' }, 'UTC')).toBe(false);
    expect(valueToInput(12, { type: 'number' }, 'UTC')).toBe('12');
  });
});
