/** The app's routes (typed, code-based); search parameters are flat URL keys (lib/url.ts). */
import { createRootRouteWithContext, createRoute, createRouter, lazyRouteComponent, Outlet } from '@tanstack/react-router';
import type { QueryClient } from '@tanstack/react-query';
import { parseSearch, stringifySearch, safeRedirect } from './lib/url';
import { parseQueueSearch } from './lib/queue-search';
import { parseAuditSearch } from './lib/admin-nav';
import { AppLayout } from './components/AppLayout';
import { SignInPage } from './pages/SignIn';
import { OverviewPage } from './pages/Overview';
// the screens after the overview load on first use (smaller first load)
const QueuePage = lazyRouteComponent(() => import('./pages/Queue'), 'QueuePage');
const TaskPage = lazyRouteComponent(() => import('./pages/Task'), 'TaskPage');
const CreateTaskPage = lazyRouteComponent(() => import('./pages/CreateTask'), 'CreateTaskPage');
const ProcessSettingsPage = lazyRouteComponent(() => import('./pages/ProcessSettings'), 'ProcessSettingsPage');
// process screens: KPI dashboard (charts) and the import, lazy for a small first load
const KpisPage = lazyRouteComponent(() => import('./pages/Kpis'), 'KpisPage');
const ImportPage = lazyRouteComponent(() => import('./pages/Import'), 'ImportPage');
import { parseKpiSearch } from './lib/kpi';
import { NotFoundPage } from './pages/NotFound';

const rootRoute = createRootRouteWithContext<{ queryClient: QueryClient }>()({
  component: Outlet,
  notFoundComponent: NotFoundPage,
});

export const signInRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/sign-in',
  validateSearch: (s: Record<string, unknown>): { redirect?: string } =>
    typeof s.redirect === 'string' && safeRedirect(s.redirect) !== '/' ? { redirect: safeRedirect(s.redirect) } : {},
  component: SignInPage,
});

const appRoute = createRoute({ getParentRoute: () => rootRoute, id: 'app', component: AppLayout });

export const overviewRoute = createRoute({ getParentRoute: () => appRoute, path: '/', component: OverviewPage });

export const queueRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/processes/$processId/queue',
  validateSearch: parseQueueSearch,
  component: QueuePage,
});

export const createTaskRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/processes/$processId/new',
  component: CreateTaskPage,
});

export const SETTINGS_TABS = ['settings', 'fields', 'rules', 'developer'] as const;
export type SettingsTab = (typeof SETTINGS_TABS)[number];
export const settingsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/processes/$processId/settings',
  validateSearch: (s: Record<string, unknown>): { tab?: SettingsTab } =>
    SETTINGS_TABS.includes(s.tab as SettingsTab) && s.tab !== 'settings' ? { tab: s.tab as SettingsTab } : {},
  component: ProcessSettingsPage,
});

export const kpisRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/kpis',
  validateSearch: parseKpiSearch,
  component: KpisPage,
});

export const importRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/processes/$processId/import',
  component: ImportPage,
});

export const taskRoute = createRoute({ getParentRoute: () => appRoute, path: '/tasks/$taskId', component: TaskPage });

// Administration (pages/admin): its section, the notifications and one's own account; each screen
// checks its permission and answers "not allowed" to a role without it
const admin = (name: keyof typeof import('./pages/admin/index')) => lazyRouteComponent(() => import('./pages/admin/index'), name);
export const adminRoute = createRoute({ getParentRoute: () => appRoute, path: '/admin', component: admin('AdminLayout') });
const adminIndexRoute = createRoute({ getParentRoute: () => adminRoute, path: '/', component: admin('AdminIndexPage') });
const adminUsersRoute = createRoute({ getParentRoute: () => adminRoute, path: '/users', component: admin('UsersPage') });
const adminMatesRoute = createRoute({ getParentRoute: () => adminRoute, path: '/mates', component: admin('MatesPage') });
const adminTenantRoute = createRoute({ getParentRoute: () => adminRoute, path: '/tenant', component: admin('TenantPage') });
const adminWebhooksRoute = createRoute({ getParentRoute: () => adminRoute, path: '/webhooks', component: admin('WebhooksPage') });
export const adminWebhookRoute = createRoute({
  getParentRoute: () => adminRoute,
  path: '/webhooks/$webhookId',
  component: admin('WebhookPage'),
});
export const adminAuditRoute = createRoute({
  getParentRoute: () => adminRoute,
  path: '/audit',
  validateSearch: parseAuditSearch,
  component: admin('AuditPage'),
});
const notificationsRoute = createRoute({ getParentRoute: () => appRoute, path: '/notifications', component: admin('NotificationsPage') });
const accountRoute = createRoute({ getParentRoute: () => appRoute, path: '/account', component: admin('AccountPage') });
const ADMIN_TREE = [
  adminRoute.addChildren([
    adminIndexRoute,
    adminUsersRoute,
    adminMatesRoute,
    adminTenantRoute,
    adminWebhooksRoute,
    adminWebhookRoute,
    adminAuditRoute,
  ]),
  notificationsRoute,
  accountRoute,
];

const routeTree = rootRoute.addChildren([
  signInRoute,
  appRoute.addChildren([overviewRoute, queueRoute, createTaskRoute, settingsRoute, taskRoute, kpisRoute, importRoute, ...ADMIN_TREE]),
]);

export const router = createRouter({
  routeTree,
  context: { queryClient: undefined! },
  parseSearch,
  stringifySearch,
  defaultPreload: 'intent',
  scrollRestoration: true,
});

declare module '@tanstack/react-router' {
  interface Register {
    router: typeof router;
  }
}
