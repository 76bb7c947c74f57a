import { describe, expect, it } from 'vitest';
import { renderToStaticMarkup } from 'react-dom/server';
import type { ReactNode } from 'react';
import { MantineProvider } from '@mantine/core';
import { DataTable } from './DataTable';

const render = (node: ReactNode) => renderToStaticMarkup(<MantineProvider>{node}</MantineProvider>);
const people = [
  { id: 1, name: 'anna', seen: '2 minutes ago' },
  { id: 2, name: 'bo', seen: 'never' },
];

describe('DataTable', () => {
  it('renders a header row and a row per item, with the row and cell attributes asked for', () => {
    const html = render(
      <DataTable
        rows={people}
        rowKey={(p) => p.id}
        rowTestId={(p) => `user-${p.name}`}
        testId="users-table"
        minWidth={600}
        columns={[
          { header: 'User', cell: (p) => p.name },
          { header: 'Last seen', cell: (p) => p.seen, td: (p) => ({ title: `seen ${p.seen}`, 'data-testid': 'seen' }) },
          { header: 'Actions', hidden: true, cell: (p) => <button type="button">Edit {p.name}</button> },
        ]}
      />,
    );
    expect(html).toContain('data-testid="users-table"');
    expect(html.match(/<th[ >]/g)).toHaveLength(3);
    expect(html.match(/<tr/g)).toHaveLength(3);
    expect(html).toContain('data-testid="user-anna"');
    expect(html).toContain('data-testid="user-bo"');
    expect(html).toContain('title="seen never"');
    expect(html).toMatch(/<th[^>]*><span[^>]*>Actions<\/span><\/th>/); // read by screen readers only
    expect(html).toContain('Edit bo');
  });
  it('leaves out a column given as false', () => {
    const manage = false;
    const html = render(
      <DataTable
        rows={people}
        rowKey={(p) => p.id}
        minWidth={600}
        columns={[{ header: 'User', cell: (p) => p.name }, manage && { header: 'Again', cell: () => 'Redeliver' }]}
      />,
    );
    expect(html.match(/<th[ >]/g)).toHaveLength(1);
    expect(html).not.toContain('Redeliver');
  });
  it('shows the empty state instead of a table when there are no rows', () => {
    const html = render(
      <DataTable rows={[]} rowKey={() => 0} minWidth={600} empty={<p>No users yet</p>} columns={[{ header: 'User', cell: () => '' }]} />,
    );
    expect(html).toContain('No users yet');
    expect(html).not.toContain('<table');
  });
  it('frames the table unless told not to, with the footer inside the frame', () => {
    const props = {
      rows: people,
      rowKey: (p: (typeof people)[number]) => p.id,
      minWidth: 600,
      columns: [{ header: 'User', cell: () => '' }],
    };
    const framed = render(<DataTable {...props} footer={<p>newest 200</p>} />);
    const bare = render(<DataTable {...props} framed={false} />);
    expect(framed).toMatch(/mantine-Card-root/);
    expect(framed).toMatch(/newest 200<\/p><\/div>$/);
    expect(bare).not.toMatch(/mantine-Card-root/);
  });
  it('stacked (a phone): a card per item, the first column as its title, "header: value" lines, the buttons at the foot', () => {
    const html = render(
      <DataTable
        stacked
        rows={people}
        rowKey={(p) => p.id}
        rowTestId={(p) => `user-${p.name}`}
        testId="users-table"
        minWidth={600}
        columns={[
          { header: 'User', cell: (p) => p.name },
          { header: 'Last seen', cell: (p) => p.seen, td: (p) => ({ title: `seen ${p.seen}` }) },
          { header: 'Actions', hidden: true, cell: (p) => <button type="button">Edit {p.name}</button> },
        ]}
      />,
    );
    expect(html).not.toContain('<table');
    expect(html).toMatch(/<ul[^>]*data-testid="users-table"/);
    expect(html.match(/<li[^>]*data-testid="user-/g)).toHaveLength(2);
    expect(html).toMatch(/>Last seen<\/p><div[^>]*title="seen never"[^>]*>never</);
    expect(html).not.toContain('>Actions<'); // a column of buttons needs no header
    expect(html.indexOf('Edit anna')).toBeGreaterThan(html.indexOf('2 minutes ago'));
  });
});
