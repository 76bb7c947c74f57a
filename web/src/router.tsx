/**
 * The app's routes (typed, code-based): paths, search parsers and the page of each; search
 * parameters are flat URL keys (lib/url.ts). Only main.tsx imports this file: a page reads its own
 * route through `getRouteApi('<route id>')`, typed by the registration at the end, so no page
 * imports the router (`npm run lint` fails on an import cycle). The signed-in routes sit under the
 * pathless layout `_app`, so their ids start with `/_app`.
 */
import { createRootRouteWithContext, createRoute, createRouter, lazyRouteComponent, Outlet } from '@tanstack/react-router';
import type { QueryClient } from '@tanstack/react-query';
import { parseSearch, parseSignInSearch, stringifySearch } from './lib/url';
import { parseQueueSearch } from './lib/queue-search';
import { parseAuditSearch } from './lib/admin-nav';
import { parseKpiSearch } from './lib/kpi';
import { parseSettingsSearch } from './lib/settings';
import { AppLayout } from './components/AppLayout';
import { SignInPage } from './pages/SignIn';
import { OverviewPage } from './pages/Overview';
import { NotFoundPage } from './pages/NotFound';

// the screens after the overview load on first use (a smaller first load); the KPI dashboard
// (charts) and the import are the heaviest
const QueuePage = lazyRouteComponent(() => import('./pages/queue/QueuePage'), 'QueuePage');
const TaskPage = lazyRouteComponent(() => import('./pages/task/TaskPage'), 'TaskPage');
const CreateTaskPage = lazyRouteComponent(() => import('./pages/CreateTask'), 'CreateTaskPage');
const ProcessSettingsPage = lazyRouteComponent(() => import('./pages/ProcessSettings'), 'ProcessSettingsPage');
const KpisPage = lazyRouteComponent(() => import('./pages/Kpis'), 'KpisPage');
const ImportPage = lazyRouteComponent(() => import('./pages/Import'), 'ImportPage');

const rootRoute = createRootRouteWithContext<{ queryClient: QueryClient }>()({
  component: Outlet,
  notFoundComponent: NotFoundPage,
});

const signInRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/sign-in',
  validateSearch: parseSignInSearch,
  component: SignInPage,
});

/** The signed-in frame (header, session, live updates) around every other screen. */
const appRoute = createRoute({ getParentRoute: () => rootRoute, id: '_app', component: AppLayout });

const overviewRoute = createRoute({ getParentRoute: () => appRoute, path: '/', component: OverviewPage });

const queueRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/processes/$processId/queue',
  validateSearch: parseQueueSearch,
  component: QueuePage,
});

const createTaskRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/processes/$processId/new',
  component: CreateTaskPage,
});

const settingsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/processes/$processId/settings',
  validateSearch: parseSettingsSearch,
  component: ProcessSettingsPage,
});

const kpisRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/kpis',
  validateSearch: parseKpiSearch,
  component: KpisPage,
});

const importRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/processes/$processId/import',
  component: ImportPage,
});

const taskRoute = createRoute({ getParentRoute: () => appRoute, path: '/tasks/$taskId', component: TaskPage });

// Administration (pages/admin): its section, the notifications and one's own account; each screen
// checks its permission and answers "not allowed" to a role without it
const admin = (name: keyof typeof import('./pages/admin/index')) => lazyRouteComponent(() => import('./pages/admin/index'), name);
const adminRoute = createRoute({ getParentRoute: () => appRoute, path: '/admin', component: admin('AdminLayout') });
const adminIndexRoute = createRoute({ getParentRoute: () => adminRoute, path: '/', component: admin('AdminIndexPage') });
const adminUsersRoute = createRoute({ getParentRoute: () => adminRoute, path: '/users', component: admin('UsersPage') });
const adminMatesRoute = createRoute({ getParentRoute: () => adminRoute, path: '/mates', component: admin('MatesPage') });
const adminTenantRoute = createRoute({ getParentRoute: () => adminRoute, path: '/tenant', component: admin('TenantPage') });
const adminWebhooksRoute = createRoute({ getParentRoute: () => adminRoute, path: '/webhooks', component: admin('WebhooksPage') });
const adminWebhookRoute = createRoute({
  getParentRoute: () => adminRoute,
  path: '/webhooks/$webhookId',
  component: admin('WebhookPage'),
});
const adminAuditRoute = createRoute({
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
