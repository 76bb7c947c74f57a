/** Mantine's anchor and buttons as typed router links (route params and search checked by TypeScript). */
import { forwardRef } from 'react';
import { Anchor, Button, UnstyledButton, type AnchorProps, type ButtonProps } from '@mantine/core';
import { createLink } from '@tanstack/react-router';

const AnchorA = forwardRef<HTMLAnchorElement, AnchorProps & React.AnchorHTMLAttributes<HTMLAnchorElement>>((props, ref) => (
  <Anchor component="a" ref={ref} {...props} />
));
const ButtonA = forwardRef<HTMLAnchorElement, ButtonProps & React.AnchorHTMLAttributes<HTMLAnchorElement>>((props, ref) => (
  <Button component="a" ref={ref} {...props} />
));
const UnstyledA = forwardRef<HTMLAnchorElement, React.AnchorHTMLAttributes<HTMLAnchorElement>>((props, ref) => (
  <UnstyledButton component="a" ref={ref} {...props} />
));

export const AnchorLink = createLink(AnchorA);
export const ButtonLink = createLink(ButtonA);
export const UnstyledLink = createLink(UnstyledA);
