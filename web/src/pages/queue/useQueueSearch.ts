/**
 * The queue view's state in the URL (`?queue=Manual&error=true&q=acme&sort=-createdAt&f.Country=DK`,
 * lib/queue-search.ts), so a link shows a colleague the same tasks: the process, the open queue
 * (Ready when the URL names none) and a setter that writes the URL.
 */
import { getRouteApi } from '@tanstack/react-router';
import type { QueueName } from '../../lib/api-types';
import type { QueueSearch } from '../../lib/queue-search';

const route = getRouteApi('/_app/processes/$processId/queue');

export function useQueueSearch() {
  const { processId } = route.useParams();
  const search = route.useSearch();
  const navigate = route.useNavigate();
  const queue: QueueName = search.queue ?? 'Ready';
  return {
    /** the process id as the URL has it (for links), and as a number (for the API) */
    processId,
    id: Number(processId),
    /** the search as the URL has it */
    search,
    queue,
    /** the search with its queue filled in: what the list asks the API for */
    effective: { ...search, queue } satisfies QueueSearch,
    /** a new search; `replace` for typing, so each pause does not become a step back */
    setSearch: (next: QueueSearch, replace = false) => navigate({ search: next, replace }),
  };
}
