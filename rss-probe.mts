import fs from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
const hwm = () => Math.round(Number(/VmHWM:\s+(\d+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'))![1]) / 1024);
const rss = () => Math.round(Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'))![1]) / 1024);
const extra = process.argv[3] ? process.argv[3].split(' ') : [];
const lite = await PGlite.create(process.argv[2] + '/pgdata', extra.length ? { startParams: [...(PGlite as any).defaultStartParams ?? [], ...extra] } : {});
const r = await lite.query(`SELECT current_setting('shared_buffers') sb, current_setting('work_mem') wm, current_setting('wal_buffers') wb, current_setting('fsync') f`);
console.log(JSON.stringify(r.rows[0]), 'hwm', hwm(), 'rss', rss());
await lite.close();
