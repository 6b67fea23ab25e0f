// The notifications module's surface for the rest of the service: the message queue, its port for the
// invitations' sent times, the message texts and the notifier's types.
export { MESSAGE_WORK, MessageQueue, type InvitationMessageSent } from './message-queue.ts';
export { invitationTemplate, LINK_REMOVED, NAME_IN_MESSAGE_MAX, nameInMessage } from './templates.ts';
export type { Channel, OutgoingMessage } from './notifier.ts';
export { startNotifications, type Notifications, type NotificationsDeps } from './start.ts';
