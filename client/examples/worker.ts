// A worker robot: books invoices, four at a time; each task is handed back by its outcome. SIGTERM or Ctrl-C stops it cleanly.
import { MateClient, ManualError, runWorker } from '@queuemate/client';

interface Invoice {
  invoiceNo: string;
  amount: number;
}

const client = MateClient.fromEnv(process.env); // QUEUEMATE_URL, _CLIENT_ID, _API_SECRET, _MATE, _PASSWORD
const stop = new AbortController();
process.once('SIGTERM', () => stop.abort()).once('SIGINT', () => stop.abort());

await runWorker<Invoice>(
  client,
  'invoices',
  async (task) => {
    if (task.amount === null || task.amount > 10_000) throw new ManualError('Needs a person: no amount, or over 10,000'); // → Manual
    return { reason: 'Booked', comment: `Booked ${task.invoiceNo}: ${task.amount}` }; // → Solved; any other throw → Error
  },
  { concurrency: 4, signal: stop.signal },
);
