/** Line icons, 20×20 on a 1.6 stroke; decorative unless a label is given. */

import type { ReactNode } from "react";

function Icon({ children, size = 18, label }: { children: ReactNode; size?: number; label?: string }) {
  return (
    <svg
      width={size}
      height={size}
      viewBox="0 0 20 20"
      fill="none"
      stroke="currentColor"
      strokeWidth={1.6}
      strokeLinecap="round"
      strokeLinejoin="round"
      aria-hidden={label ? undefined : true}
      role={label ? "img" : undefined}
      aria-label={label}
    >
      {children}
    </svg>
  );
}

export const ArrowUp = () => (
  <Icon>
    <path d="M10 16V4M5 9l5-5 5 5" />
  </Icon>
);

export const StopSquare = () => (
  <Icon>
    <rect x="5.5" y="5.5" width="9" height="9" rx="1.5" fill="currentColor" stroke="none" />
  </Icon>
);

export const Plus = () => (
  <Icon>
    <path d="M10 4v12M4 10h12" />
  </Icon>
);

export const Trash = () => (
  <Icon size={16}>
    <path d="M4 6h12M8 6V4.5h4V6M6 6l.7 9.5h6.6L14 6" />
  </Icon>
);

export const Refresh = () => (
  <Icon size={16}>
    <path d="M15.5 10a5.5 5.5 0 1 1-1.6-3.9M15.5 4v3h-3" />
  </Icon>
);

export const Chevron = () => (
  <Icon size={14}>
    <path d="M7 5l5 5-5 5" />
  </Icon>
);

export const ChevronDown = () => (
  <Icon size={14}>
    <path d="M5 7.5l5 5 5-5" />
  </Icon>
);

export const Menu = () => (
  <Icon>
    <path d="M3.5 6h13M3.5 10h13M3.5 14h13" />
  </Icon>
);

export const Close = () => (
  <Icon size={16}>
    <path d="M5 5l10 10M15 5L5 15" />
  </Icon>
);

export const Wrench = () => (
  <Icon size={15}>
    <path d="M12.5 3.5a3.5 3.5 0 0 0-3.2 4.9L3.8 13.9a1.5 1.5 0 0 0 2.1 2.1l5.5-5.5a3.5 3.5 0 0 0 4.9-3.2l-2 2-2-.5-.5-2 2-2c-.4-.2-.9-.3-1.3-.3z" />
  </Icon>
);

export const Spark = () => (
  <Icon size={15}>
    <path d="M10 3v3M10 14v3M3 10h3M14 10h3M5.2 5.2l2 2M12.8 12.8l2 2M5.2 14.8l2-2M12.8 7.2l2-2" />
  </Icon>
);

export const Alert = () => (
  <Icon size={18}>
    <path d="M10 3.5l7 12.5H3L10 3.5zM10 8.5v3.5M10 14.2v.1" />
  </Icon>
);

export const Folder = ({ size = 16 }: { size?: number }) => (
  <Icon size={size}>
    <path d="M3 6.5V15a1 1 0 0 0 1 1h12a1 1 0 0 0 1-1V8a1 1 0 0 0-1-1h-6L8.5 5H4a1 1 0 0 0-1 1.5z" />
  </Icon>
);

export const FileIcon = () => (
  <Icon size={16}>
    <path d="M11.5 3H6a1 1 0 0 0-1 1v12a1 1 0 0 0 1 1h8a1 1 0 0 0 1-1V6.5L11.5 3zM11.5 3v3.5H15" />
  </Icon>
);

export const ChevronLeft = () => (
  <Icon size={14}>
    <path d="M13 5l-5 5 5 5" />
  </Icon>
);

export const Mark = ({ size = 22 }: { size?: number }) => (
  <svg width={size} height={size} viewBox="0 0 32 32" aria-hidden="true">
    <rect width="32" height="32" rx="9" fill="var(--accent)" />
    <circle cx="16" cy="16" r="6.5" fill="none" stroke="var(--on-accent)" strokeWidth="3" />
    <circle cx="16" cy="16" r="1.8" fill="var(--on-accent)" />
  </svg>
);

export const Eye = () => (
  <Icon size={15}>
    <path d="M2 10s3-5.5 8-5.5S18 10 18 10s-3 5.5-8 5.5S2 10 2 10z" />
    <circle cx="10" cy="10" r="2.3" />
  </Icon>
);
