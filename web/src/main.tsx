import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import {
  MantineProvider,
  Modal,
  Notification,
  createTheme,
  localStorageColorSchemeManager,
  type CSSVariablesResolver,
} from '@mantine/core';
import { Notifications } from '@mantine/notifications';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { RouterProvider } from '@tanstack/react-router';
import '@mantine/core/styles.css';
import '@mantine/notifications/styles.css';
import '@mantine/dates/styles.css';
import { router } from './router';
import { ApiError } from './lib/http';

/** The CSP nonce the server put on this page (src/web/serve.ts); Mantine's <style> elements carry it. */
const nonce = document.querySelector<HTMLMetaElement>('meta[property="csp-nonce"]')?.nonce ?? '';
// The scroll lock of Mantine's modals (react-remove-scroll, through get-nonce) adds a <style> too; it
// reads the nonce from this global when none was set through its own module.
(globalThis as { __webpack_nonce__?: string }).__webpack_nonce__ = nonce;

// Shade 8 and auto contrast: links, buttons and badges keep a 4.5:1 contrast (WCAG AA) in both themes.
const theme = createTheme({
  primaryColor: 'blue',
  primaryShade: { light: 8, dark: 8 },
  autoContrast: true,
  // close buttons without text get a name for screen readers
  components: {
    Notification: Notification.extend({ defaultProps: { closeButtonProps: { 'aria-label': 'Close notification' } } }),
    Modal: Modal.extend({ defaultProps: { closeButtonProps: { 'aria-label': 'Close dialog' } } }),
  },
  defaultRadius: 'md',
  fontFamily: 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif',
});

// dimmed text one shade darker (lighter in dark) than Mantine's default, for contrast
// and the colours Mantine draws text in (light variants, filled backgrounds) dark enough for white or tinted text
const DARKER = ['blue', 'red', 'teal', 'green', 'grape', 'gray', 'cyan', 'violet', 'indigo'];
const resolver: CSSVariablesResolver = () => ({
  variables: {},
  light: {
    '--mantine-color-dimmed': 'var(--mantine-color-gray-7)',
    // a field's error text (red-6 by default is 3.3:1 on white)
    '--mantine-color-error': 'var(--mantine-color-red-9)',
    '--mantine-color-anchor': 'var(--mantine-color-blue-9)',
    '--mantine-color-orange-light-color': '#a63a0a',
    '--mantine-color-yellow-light-color': '#8a5a00',
    '--mantine-color-orange-filled': '#b8440c',
    '--mantine-color-orange-filled-hover': '#a63a0a',
    ...Object.fromEntries(
      DARKER.flatMap((c) => [
        [`--mantine-color-${c}-light-color`, `var(--mantine-color-${c}-9)`],
        [`--mantine-color-${c}-filled`, `var(--mantine-color-${c}-9)`],
        [`--mantine-color-${c}-filled-hover`, `var(--mantine-color-${c}-9)`],
      ]),
    ),
  },
  dark: {
    '--mantine-color-dimmed': 'var(--mantine-color-dark-1)',
    '--mantine-color-error': 'var(--mantine-color-red-5)',
    // filled backgrounds under white text: shade 8 is 3.9:1 for teal; 9 passes 4.5:1
    ...Object.fromEntries(
      DARKER.flatMap((c) => [
        [`--mantine-color-${c}-filled`, `var(--mantine-color-${c}-9)`],
        [`--mantine-color-${c}-filled-hover`, `var(--mantine-color-${c}-9)`],
      ]),
    ),
  },
});

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // a refusal will not change by asking again; a network blip may
      retry: (count, err) => !(err instanceof ApiError && err.status >= 400 && err.status < 500) && count < 2,
      refetchOnWindowFocus: true,
    },
  },
});

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <MantineProvider
      theme={theme}
      defaultColorScheme="auto"
      colorSchemeManager={localStorageColorSchemeManager({ key: 'qm-color-scheme' })}
      getStyleNonce={() => nonce}
      cssVariablesResolver={resolver}
    >
      {/* bottom: a message never covers the header and its menus (on a phone it spans the width) */}
      <Notifications position="bottom-right" />
      <QueryClientProvider client={queryClient}>
        <RouterProvider router={router} context={{ queryClient }} />
      </QueryClientProvider>
    </MantineProvider>
  </StrictMode>,
);
