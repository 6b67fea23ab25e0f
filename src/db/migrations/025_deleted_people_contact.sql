-- A deleted person keeps no contact details (src/modules/people/store.ts softDeletePerson), and the messages sent
-- to them keep no address or words (src/modules/notifications/store.ts forgetRecipient): the same for the people
-- deleted before this rule.
UPDATE people SET email = NULL, phone = NULL, company_name = NULL, title = NULL
 WHERE deleted_at IS NOT NULL AND (email IS NOT NULL OR phone IS NOT NULL OR company_name IS NOT NULL OR title IS NOT NULL);
UPDATE outbound_messages m SET to_address = '', subject = '', body = '', sealed_content = NULL, link = NULL, claimed_until = NULL,
       status = CASE WHEN m.status = 'pending' THEN 'withdrawn' ELSE m.status END
  FROM invitations i JOIN people p ON p.id = i.person_id
 WHERE m.invitation_id = i.id AND p.deleted_at IS NOT NULL AND m.to_address <> '';
