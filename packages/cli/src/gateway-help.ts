// What the gateway simulator takes on stdin; its own module so that the CLI can show it without loading the
// simulator (and the decision code with its time-zone library) on every call.
export const STDIN_HELP =
  'Type on stdin:  swipe <lock> <credential> | grant <lock> [key] | deny <lock> [key] [reason] | close <lock> | left-open <lock> | disconnect | connect | status | offline | quit';
