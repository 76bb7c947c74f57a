/** The app's routes (typed, code-based); search parameters are flat URL keys (lib/url.ts). */
import { createRootRouteWithContext, createRoute, createRouter, lazyRouteComponent, Outlet } from '@tanstack/react-router';
import type { QueryClient } from '@tanstack/react-query';
import { parseSearch, stringifySearch, safeRedirect } from './lib/url';
import { parseQueueSearch } from './lib/queue-search';
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

const routeTree = rootRoute.addChildren([
  signInRoute,
  appRoute.addChildren([overviewRoute, queueRoute, createTaskRoute, settingsRoute, taskRoute, kpisRoute, importRoute]),
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
