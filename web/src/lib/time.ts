/** Dates and durations as people read them: in the tenant's time zone, with relative times. */
import dayjs from 'dayjs';
import utc from 'dayjs/plugin/utc';
import timezone from 'dayjs/plugin/timezone';
import relativeTime from 'dayjs/plugin/relativeTime';

dayjs.extend(utc);
dayjs.extend(timezone);
dayjs.extend(relativeTime);

function valid(iso: string | null | undefined): dayjs.Dayjs | null {
  if (!iso) return null;
  const d = dayjs(iso);
  return d.isValid() ? d : null;
}

/** "25 Nov 2026, 14:03" in the time zone (an unknown zone falls back to UTC, never throws). */
export function formatDateTime(iso: string | null | undefined, timeZone: string): string {
  const d = valid(iso);
  if (!d) return '—';
  try {
    return d.tz(timeZone).format('D MMM YYYY, HH:mm');
  } catch {
    return d.utc().format('D MMM YYYY, HH:mm') + ' UTC';
  }
}

/** "25 Nov 2026" in the time zone. */
export function formatDate(iso: string | null | undefined, timeZone: string): string {
  const d = valid(iso);
  if (!d) return '—';
  try {
    return d.tz(timeZone).format('D MMM YYYY');
  } catch {
    return d.utc().format('D MMM YYYY');
  }
}

/** "3 minutes ago", "in 2 hours", "just now" relative to now. */
export function formatRelative(iso: string | null | undefined, now: Date = new Date()): string {
  const d = valid(iso);
  if (!d) return 'never';
  const seconds = Math.round((d.valueOf() - now.valueOf()) / 1000);
  if (Math.abs(seconds) < 45) return 'just now';
  return d.from(dayjs(now));
}

/** "25 Nov 2026, 14:03 (3 minutes ago)" */
export function formatWhen(iso: string | null | undefined, timeZone: string, now: Date = new Date()): string {
  if (!valid(iso)) return '—';
  return `${formatDateTime(iso, timeZone)} (${formatRelative(iso, now)})`;
}

/** Seconds as "1 h 05 min", "4 min 10 s", "12 s". */
export function formatDuration(totalSeconds: number): string {
  const s = Math.max(0, Math.round(totalSeconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  if (h > 0) return `${h} h ${String(m).padStart(2, '0')} min`;
  if (m > 0) return `${m} min${sec ? ` ${sec} s` : ''}`;
  return `${sec} s`;
}

/** The zone's offset from UTC at that moment, e.g. "UTC+01:00", for labels. */
export function zoneLabel(timeZone: string, at: Date = new Date()): string {
  try {
    return `${timeZone} (UTC${dayjs(at).tz(timeZone).format('Z')})`;
  } catch {
    return timeZone;
  }
}
