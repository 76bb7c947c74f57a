import { describe, expect, it } from 'vitest';
import type { ComponentProps } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { MantineProvider } from '@mantine/core';
import { SelectionBar } from './SelectionBar';

const none = () => {};
const bar = (props: Partial<ComponentProps<typeof SelectionBar>>) =>
  renderToStaticMarkup(
    <MantineProvider>
      <SelectionBar
        queue="Ready"
        selected={3}
        total={3}
        allShownSelected={false}
        allMatching={false}
        canDelete={false}
        onSelectAllMatching={none}
        onClear={none}
        onBulk={none}
        {...props}
      />
    </MantineProvider>,
  );

describe('SelectionBar', () => {
  it('counts the selected tasks and offers the actions of every queue', () => {
    const html = bar({});
    expect(html).toContain('3 selected');
    for (const b of ['Move to…', 'Mark urgent', 'Not urgent', 'Clear selection']) expect(html).toContain(b);
    for (const b of ['Resolve errors', 'Approve', 'Reject', 'Delete', 'matching this filter']) expect(html).not.toContain(b);
  });
  it('offers resolving errors in Manual, approving and rejecting in Needs approval', () => {
    expect(bar({ queue: 'Manual' })).toContain('Resolve errors');
    const approval = bar({ queue: 'NeedsApproval' });
    expect(approval).toContain('Approve');
    expect(approval).toContain('Reject');
  });
  it('offers Delete only to a role that may delete', () => {
    expect(bar({ canDelete: true })).toContain('Delete');
  });
  it('offers every matching task once all shown rows are selected and more match', () => {
    expect(bar({ total: 250, allShownSelected: true })).toContain('Select all 250 matching this filter');
    expect(bar({ total: 250, allShownSelected: false })).not.toContain('matching this filter');
    expect(bar({ total: 250, allShownSelected: true, allMatching: true })).toContain('All 250 matching tasks selected');
  });
});
