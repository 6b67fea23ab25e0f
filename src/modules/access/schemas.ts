// The shapes of access decisions on the operator API: weekly windows of a security group, a time zone.
import { Type, type Static } from '@sinclair/typebox';
import { named } from '../../platform/openapi-schemas.ts';
import { FORM } from '../../platform/validation.ts';

// Written out (not mapped from WEEKDAYS) so that the static type is the union of days.
const Day = Type.Union([
  Type.Literal('mon'), Type.Literal('tue'), Type.Literal('wed'), Type.Literal('thu'), Type.Literal('fri'), Type.Literal('sat'), Type.Literal('sun'),
]);

const ClockTime = Type.String({ pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$|^24:00$', description: 'HH:MM, 00:00 to 24:00', [FORM]: 'a time of day HH:MM, 00:00 to 24:00' });

export const TimeWindowSchema = named(
  'TimeWindow',
  Type.Object(
    {
      days: Type.Array(Day, { minItems: 1, maxItems: 7, uniqueItems: true }),
      start: ClockTime,
      end: ClockTime,
    },
    {
      additionalProperties: false,
      description: "A weekly window in the door's local time: on each of `days`, from `start` (inclusive) to `end` (exclusive); an `end` before `start` runs past midnight.",
      examples: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '07:00', end: '19:00' }],
    },
  ),
);

/** null: at any time. */
export const Windows = Type.Union([Type.Array(TimeWindowSchema, { minItems: 1, maxItems: 28 }), Type.Null()], {
  description: 'weekly windows in the time zone of each door (its location, inherited); null: at any time (an empty list is refused: it would open never)',
});
export type Windows = Static<typeof Windows>;

export const TimeZone = Type.String({ minLength: 1, maxLength: 64, description: 'an IANA time-zone name, e.g. Europe/Berlin', examples: ['Europe/Berlin'] });
