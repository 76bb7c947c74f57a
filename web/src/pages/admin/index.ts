/** The Administration screens, loaded on first use as one chunk (router.tsx). */
export { AdminLayout, AdminIndexPage } from './AdminLayout';
export { UsersPage } from './Users';
export { MatesPage } from './Mates';
export { TenantPage } from './Tenant';
export { WebhooksPage } from './Webhooks';
export { WebhookPage } from './Webhook';
export { AuditPage } from './Audit';
export { NotificationsPage } from './Notifications';
export { AccountPage } from './Account';
