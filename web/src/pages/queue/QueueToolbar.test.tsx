import { describe, expect, it } from 'vitest';
import { renderToStaticMarkup } from 'react-dom/server';
import { MantineProvider } from '@mantine/core';
import type { Field, QueueName } from '../../lib/api-types';
import type { QueueSearch } from '../../lib/queue-search';
import { QueueToolbar } from './QueueToolbar';

const fields = [
  { name: 'Country', label: 'Country of supplier', type: 'text' },
  { name: 'Amount', label: null, type: 'number' },
] as Field[];
const toolbar = (search: QueueSearch, queue: QueueName = 'Ready', f: Field[] = fields) =>
  renderToStaticMarkup(
    <MantineProvider>
      <QueueToolbar search={search} queue={queue} fields={f} onSearch={() => {}} />
    </MantineProvider>,
  );

describe('QueueToolbar', () => {
  it('shows the search from the URL, and the error flag only in Manual', () => {
    const ready = toolbar({ q: 'acme' });
    expect(ready).toContain('value="acme"');
    expect(ready).toContain('Clear search');
    expect(ready).not.toContain('Errors');
    expect(toolbar({ error: true }, 'Manual')).toContain('Errors only');
  });
  it('offers a field filter only when the process has fields', () => {
    expect(toolbar({})).toContain('Add filter');
    expect(toolbar({}, 'Ready', [])).not.toContain('Add filter');
  });
  it('lists the active filters by the field label, each removable', () => {
    const html = toolbar({ f: { Country: 'DK', Gone: 'x' } });
    expect(html).toContain('Country of supplier: DK');
    expect(html).toContain('aria-label="Remove filter Country of supplier"');
    // a filter on a field the process no longer has keeps its name
    expect(html).toContain('aria-label="Remove filter Gone"');
  });
});
