/**
 * The bar over the queue table while tasks are selected: how many (or "all N matching"), the offer
 * to select every task matching the filter, and the bulk actions the queue and the role allow.
 */
import { Button, Group, Menu, Paper, Text } from '@mantine/core';
import type { QueueName } from '../../lib/api-types';
import { QUEUE_LABEL, QUEUES } from '../../lib/queues';
import type { BulkRequest } from '../../components/BulkDialog';

/** A bulk action as the bar offers it; the page adds which tasks it touches. */
export type BulkChoice = Omit<BulkRequest, 'ids' | 'filter'>;

export function SelectionBar({
  queue,
  selected,
  total,
  allShownSelected,
  allMatching,
  canDelete,
  onSelectAllMatching,
  onClear,
  onBulk,
}: {
  queue: QueueName;
  /** tasks selected by hand */
  selected: number;
  /** tasks matching the search */
  total: number;
  /** every row shown is selected: the offer to select all matching applies */
  allShownSelected: boolean;
  /** the bulk actions touch every task matching the search, not only the selected ones */
  allMatching: boolean;
  canDelete: boolean;
  onSelectAllMatching: () => void;
  onClear: () => void;
  onBulk: (choice: BulkChoice) => void;
}) {
  return (
    <Paper withBorder p="xs" radius="md" data-testid="selection-bar">
      <Group gap="xs" justify="space-between">
        <Group gap="xs">
          <Text size="sm" fw={600}>
            {allMatching ? `All ${total.toLocaleString()} matching tasks selected` : `${selected} selected`}
          </Text>
          {!allMatching && total > selected && allShownSelected && (
            <Button size="compact-sm" variant="subtle" onClick={onSelectAllMatching}>
              Select all {total.toLocaleString()} matching this filter
            </Button>
          )}
          <Button size="compact-sm" variant="subtle" color="gray" onClick={onClear}>
            Clear selection
          </Button>
        </Group>
        <Group gap="xs">
          <Menu withinPortal>
            <Menu.Target>
              <Button size="xs">Move to…</Button>
            </Menu.Target>
            <Menu.Dropdown>
              {QUEUES.filter((q) => q !== 'NeedsData').map((q) => (
                <Menu.Item key={q} onClick={() => onBulk({ action: 'move', queue: q, label: `Move to ${QUEUE_LABEL[q]}` })}>
                  {QUEUE_LABEL[q]}
                </Menu.Item>
              ))}
            </Menu.Dropdown>
          </Menu>
          {queue === 'Manual' && (
            <Button size="xs" variant="default" onClick={() => onBulk({ action: 'clearError', label: 'Resolve errors' })}>
              Resolve errors
            </Button>
          )}
          {queue === 'NeedsApproval' && (
            <>
              <Button size="xs" variant="default" onClick={() => onBulk({ action: 'approve', label: 'Approve' })}>
                Approve
              </Button>
              <Button size="xs" variant="default" onClick={() => onBulk({ action: 'reject', label: 'Reject' })}>
                Reject
              </Button>
            </>
          )}
          <Button size="xs" variant="default" onClick={() => onBulk({ action: 'urgent', urgent: true, label: 'Mark urgent' })}>
            Mark urgent
          </Button>
          <Button size="xs" variant="default" onClick={() => onBulk({ action: 'urgent', urgent: false, label: 'Not urgent' })}>
            Not urgent
          </Button>
          {canDelete && (
            <Button size="xs" color="red" variant="light" onClick={() => onBulk({ action: 'delete', label: 'Delete' })}>
              Delete
            </Button>
          )}
        </Group>
      </Group>
    </Paper>
  );
}
